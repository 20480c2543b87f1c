//! `kiln lsp` in a real editor: Neovim (Debian's package, found or installed by
//! scripts/neovim.sh, which fails loudly when it cannot) headless, its built-in LSP client
//! started on an example RGD with an error, as docs/editors.md sets it up. What the editor
//! received is written to a file by a small Lua script and read here.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{root, KILN};

/// `nvim`, found or installed by scripts/neovim.sh; a test that needs it fails without it.
fn nvim() -> PathBuf {
    let o = Command::new("bash")
        .arg(root().join("scripts/neovim.sh"))
        .output()
        .expect("bash runs");
    assert!(
        o.status.success(),
        "scripts/neovim.sh could not find or install Neovim (Debian: apt-get install neovim):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The client set-up of docs/editors.md (`vim.lsp.start`, or on Neovim 0.7 — Debian 12's —
/// `vim.lsp.start_client` and `buf_attach_client`), then: wait for the buffer's diagnostics
/// and write them, one a line, to `$OUT`; ask for a hover at `$HOVER_LINE`/`$HOVER_COL` (0-based
/// line, UTF-16 column) and write its text to `$HOVER_OUT`.
const INIT: &str = r#"
local function main()
  local bufnr = vim.api.nvim_get_current_buf()
  local config = { name = 'kiln', cmd = { os.getenv('KILN'), 'lsp' }, root_dir = vim.fn.getcwd() }
  if vim.lsp.start then
    vim.lsp.start(config)
  else
    vim.lsp.buf_attach_client(bufnr, vim.lsp.start_client(config))
  end
  local got = vim.wait(120000, function() return #vim.diagnostic.get(bufnr) > 0 end, 50)
  local lines = {}
  if not got then table.insert(lines, 'no diagnostics') end
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local first = d.message:gsub('\n.*', '')
    table.insert(lines, string.format('%s %d:%d-%d:%d %s', tostring(d.code), d.lnum, d.col,
      d.end_lnum, d.end_col, first))
  end
  vim.fn.writefile(lines, os.getenv('OUT'))
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    position = { line = tonumber(os.getenv('HOVER_LINE')), character = tonumber(os.getenv('HOVER_COL')) },
  }
  local answers = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', params, 120000) or {}
  local hover = {}
  for _, a in pairs(answers) do
    if a.result and a.result.contents then
      table.insert(hover, a.result.contents.value or vim.inspect(a.result.contents))
    end
    if a.err then table.insert(hover, 'error: ' .. vim.inspect(a.err)) end
  end
  vim.fn.writefile(vim.split(table.concat(hover, '\n'), '\n'), os.getenv('HOVER_OUT'))
  vim.cmd('qall!')
end
vim.api.nvim_create_autocmd('VimEnter', { callback = main })
"#;

/// What Neovim received for examples/webapp's RGD with `replicas` misspelt (a comment after
/// it, so the expression's range is not its line's): its diagnostics, one a line, and the
/// hover text on `port` of `${schema.spec.port}`.
fn in_neovim() -> (String, String, String) {
    let nvim = nvim();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("webapp");
    fs::create_dir_all(&ws).unwrap();
    let rgd = fs::read_to_string(root().join("examples/webapp/rgd.yaml"))
        .unwrap()
        .replace(
            "${schema.spec.replicas}",
            "${schema.spec.replica} # é: how many",
        );
    fs::write(ws.join("rgd.yaml"), &rgd).unwrap();
    fs::copy(
        root().join("examples/webapp/instances.yaml"),
        ws.join("instances.yaml"),
    )
    .unwrap();
    fs::write(dir.path().join("init.lua"), INIT).unwrap();
    // The hover is asked on `port` of `${schema.spec.port}` (an ASCII line: bytes are UTF-16
    // units).
    let (line, column) = rgd
        .lines()
        .enumerate()
        .find_map(|(n, l)| {
            l.find("${schema.spec.port}")
                .map(|c| (n, c + "${schema.spec.".len()))
        })
        .unwrap();
    let (out, hover) = (dir.path().join("out.txt"), dir.path().join("hover.txt"));
    let status = Command::new(&nvim)
        .args(["--headless", "-n", "-i", "NONE", "-u"])
        .arg(dir.path().join("init.lua"))
        .arg("rgd.yaml")
        .current_dir(&ws)
        .env("KILN", Path::new(KILN).canonicalize().unwrap())
        .env("OUT", &out)
        .env("HOVER_OUT", &hover)
        .env("HOVER_LINE", line.to_string())
        .env("HOVER_COL", column.to_string())
        .status()
        .expect("nvim runs");
    assert!(status.success(), "nvim: {status}");
    (
        fs::read_to_string(&out).unwrap_or_else(|e| panic!("nvim wrote no diagnostics: {e}")),
        fs::read_to_string(&hover).unwrap_or_default(),
        rgd,
    )
}

#[test]
fn neovim_shows_the_diagnostic_with_its_code_and_exact_range() {
    let (diagnostics, _, rgd) = in_neovim();
    let (line, text) = rgd
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("${schema.spec.replica}"))
        .unwrap();
    // Neovim counts columns in bytes of the line.
    let start = text.find("${").unwrap();
    let end = start + "${schema.spec.replica}".len();
    let want = format!(
        "KLN3008 {line}:{start}-{line}:{end} resource \"deployment\": failed to compile template expression at path \"spec.replicas\": \"schema.spec.replica\": undefined field 'replica' (did you mean \"replicas\"?)\n"
    );
    assert_eq!(diagnostics, want);
}

#[test]
fn neovim_shows_the_hover_of_an_expression() {
    let (_, hover, _) = in_neovim();
    // `schema.spec.port` is declared `integer | default=8080`: its type, and its declaration.
    assert!(
        hover.contains("integer") && hover.contains("8080"),
        "hover: {hover:?}"
    );
}
