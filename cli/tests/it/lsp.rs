//! `kiln lsp` driven over stdio as an editor drives it (test-support's `lsp` driver): the
//! handshake, documents opened, changed and closed, diagnostics published with exact ranges
//! and codes, across files, every request answered, shutdown and exit.

use std::fs;
use std::path::{Path, PathBuf};

use kiln_test_support::lsp::{file_uri, Lsp};
use serde_json::{json, Value};

use crate::common::{root, KILN};

/// A scratch copy of examples/webapp (an RGD and its instances in two files).
pub(crate) fn webapp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().canonicalize().unwrap().join("webapp");
    for f in ["rgd.yaml", "instances.yaml"] {
        fs::create_dir_all(&at).unwrap();
        fs::copy(root().join("examples/webapp").join(f), at.join(f)).unwrap();
    }
    (dir, at)
}

/// The 0-based line of `text` holding `needle` (the `nth` line that does), and the UTF-16
/// columns where `needle` starts and ends in it.
pub(crate) fn span_of(text: &str, needle: &str, nth: usize) -> (u64, u64, u64) {
    let (n, line) = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .nth(nth)
        .unwrap_or_else(|| panic!("{needle:?} is in the text"));
    let at = line.find(needle).unwrap();
    let utf16 = |s: &str| s.encode_utf16().count() as u64;
    (
        n as u64,
        utf16(&line[..at]),
        utf16(&line[..at]) + utf16(needle),
    )
}

fn range(line: u64, start: u64, end: u64) -> Value {
    json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": end}})
}

#[test]
fn initialize_advertises_every_capability() {
    let (_dir, ws) = webapp();
    let (lsp, init) = Lsp::start(KILN, &ws);
    let caps = &init["capabilities"];
    assert_eq!(caps["textDocumentSync"]["change"], 2, "incremental: {caps}");
    assert_eq!(caps["textDocumentSync"]["openClose"], true);
    assert_eq!(
        caps["completionProvider"]["triggerCharacters"],
        json!([".", "{", "|"])
    );
    for c in [
        "hoverProvider",
        "definitionProvider",
        "referencesProvider",
        "documentSymbolProvider",
        "codeActionProvider",
    ] {
        assert_eq!(caps[c], true, "{c}: {caps}");
    }
    assert_eq!(init["serverInfo"]["name"], "kiln");
    assert!(lsp.shutdown().success());
}

#[test]
fn a_misspelt_field_is_published_with_its_exact_range_and_code_then_cleared() {
    let (_dir, ws) = webapp();
    let rgd = ws.join("rgd.yaml");
    let uri = file_uri(&rgd);
    let good = fs::read_to_string(&rgd).unwrap();
    let (mut lsp, _) = Lsp::start(KILN, &ws);

    let published = lsp.open(&uri, &good);
    assert_eq!(Lsp::published(&published, &uri), None, "{published:?}");

    // Typed, unsaved: `replicas` misspelt, and a value with characters of 2 and 4 bytes (1 and
    // 2 UTF-16 units) before its expression.
    let bad = good
        .replace("${schema.spec.replicas}", "${schema.spec.replica}")
        .replace(
            "image: ${schema.spec.image}",
            "image: \"é😀-${schema.spec.imagee}\"",
        );
    let published = lsp.change_all(&uri, 2, &bad);
    let ds = Lsp::published(&published, &uri).expect("diagnostics for the RGD");
    assert_eq!(ds.len(), 2, "{ds:#?}");
    let (line, start, end) = span_of(&bad, "${schema.spec.replica}", 0);
    let d = &ds[0];
    assert_eq!(d["range"], range(line, start, end), "{d:#}");
    assert_eq!(d["code"], "KLN3008");
    assert_eq!(d["severity"], 1);
    assert_eq!(d["source"], "kiln");
    let href = d["codeDescription"]["href"].as_str().unwrap();
    assert!(
        href.starts_with("file:///") && href.ends_with("docs/errors.md#kln3008-type-check"),
        "{href}"
    );
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("undefined field 'replica'") && message.contains("\nhint: "),
        "{message}"
    );
    let (line, start, end) = span_of(&bad, "${schema.spec.imagee}", 0);
    assert_eq!(ds[1]["range"], range(line, start, end), "{:#}", ds[1]);

    // Fixed: the editor is told the file has no diagnostics left.
    let published = lsp.change_all(&uri, 3, &good);
    assert_eq!(Lsp::published(&published, &uri), Some(Vec::new()));
    assert!(lsp.shutdown().success());
}

#[test]
fn incremental_changes_apply_by_utf16_positions() {
    let (_dir, ws) = webapp();
    let rgd = ws.join("rgd.yaml");
    let uri = file_uri(&rgd);
    // `😀` is 2 UTF-16 units (4 bytes, 1 character), `é` 1 (2 bytes).
    let text = fs::read_to_string(&rgd).unwrap().replace(
        "image: ${schema.spec.image}",
        "image: \"😀é-${schema.spec.image}\"",
    );
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    let published = lsp.open(&uri, &text);
    assert_eq!(Lsp::published(&published, &uri), None, "{published:?}");
    // Delete the last `e` of `image}` and the `s` of `replicas}`, by UTF-16 positions.
    let (image_line, _, image_end) = span_of(&text, "${schema.spec.image}", 0);
    let (line, _, end) = span_of(&text, "${schema.spec.replicas}", 0);
    lsp.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": range(image_line, image_end - 2, image_end - 1), "text": ""},
            {"range": range(line, end - 2, end - 1), "text": ""},
        ]}),
    );
    let ds = Lsp::published(&lsp.sync(), &uri).expect("published");
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(ds[0]["range"], range(line, end - 23, end - 1));
    assert!(
        ds[0]["message"].as_str().unwrap().contains("'replica'"),
        "{:#}",
        ds[0]
    );
    assert_eq!(
        ds[1]["range"],
        range(image_line, image_end - 20, image_end - 1)
    );
    assert!(
        ds[1]["message"].as_str().unwrap().contains("'imag'"),
        "{:#}",
        ds[1]
    );
    assert!(lsp.shutdown().success());
}

#[test]
fn an_instance_is_checked_against_its_rgd_in_another_file() {
    let (_dir, ws) = webapp();
    let (rgd, instances) = (ws.join("rgd.yaml"), ws.join("instances.yaml"));
    let (rgd_uri, instances_uri) = (file_uri(&rgd), file_uri(&instances));
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    let published = lsp.open(&instances_uri, &fs::read_to_string(&instances).unwrap());
    assert_eq!(Lsp::published(&published, &instances_uri), None);

    // The RGD, open in the editor, now allows at most 2 replicas: `shop` asks for 3.
    let rgd_text = fs::read_to_string(&rgd).unwrap();
    lsp.open(&rgd_uri, &rgd_text);
    let stricter = rgd_text.replace("maximum=20", "maximum=2");
    let published = lsp.change_all(&rgd_uri, 2, &stricter);
    let ds = Lsp::published(&published, &instances_uri).expect("the instance is re-checked");
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert_eq!(ds[0]["code"], "KLN5001");
    let text = fs::read_to_string(&instances).unwrap();
    let (line, start, end) = span_of(&text, "replicas: 3", 0);
    assert_eq!(ds[0]["range"], range(line, start, end));

    // Closing the RGD without saving: the one on disk again, and the instance is cleared.
    lsp.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": rgd_uri}}),
    );
    let published = lsp.sync();
    assert_eq!(Lsp::published(&published, &instances_uri), Some(Vec::new()));
    assert!(lsp.shutdown().success());
}

#[test]
fn malformed_yaml_is_a_diagnostic_and_the_server_goes_on() {
    let (_dir, ws) = webapp();
    let uri = file_uri(&ws.join("rgd.yaml"));
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    let published = lsp.open(&uri, "spec: [\n  \"open");
    let ds = Lsp::published(&published, &uri).expect("published");
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert_eq!(ds[0]["code"], "KLN1004");
    assert!(lsp.is_running());
    assert!(lsp.shutdown().success());
}

#[test]
fn every_request_is_answered_and_errors_are_error_responses() {
    let (_dir, ws) = webapp();
    let rgd = ws.join("rgd.yaml");
    let uri = file_uri(&rgd);
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    lsp.open(&uri, &fs::read_to_string(&rgd).unwrap());
    let at = json!({"textDocument": {"uri": uri}, "position": {"line": 30, "character": 25}});
    // Each query reaches kiln_core::ide and comes back in the protocol's shape (what it holds
    // is ide's; the queries are tested there).
    for (method, params, shape) in [
        ("textDocument/hover", at.clone(), "null or object"),
        ("textDocument/completion", at.clone(), "array"),
        ("textDocument/definition", at.clone(), "array"),
        (
            "textDocument/references",
            json!({"textDocument": {"uri": uri}, "position": {"line": 30, "character": 25},
                   "context": {"includeDeclaration": true}}),
            "array",
        ),
        (
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri}}),
            "array",
        ),
        (
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": range(30, 0, 40),
                   "context": {"diagnostics": []}}),
            "array",
        ),
    ] {
        let r = lsp.request(method, params);
        let result = r.get("result").unwrap_or_else(|| panic!("{method}: {r}"));
        let ok = match shape {
            "array" => result.is_array(),
            _ => result.is_null() || result.is_object(),
        };
        assert!(ok, "{method}: {r}");
    }
    let error = |r: Value| r["error"]["code"].as_i64().unwrap_or_else(|| panic!("{r}"));
    assert_eq!(
        error(lsp.request("textDocument/unknown", json!({}))),
        -32601,
        "method not found"
    );
    assert_eq!(
        error(lsp.request("textDocument/hover", json!({"nonsense": 1}))),
        -32602,
        "invalid params"
    );
    assert_eq!(
        error(lsp.request(
            "textDocument/hover",
            json!({"textDocument": {"uri": "untitled:1"}, "position": {"line": 0, "character": 0}})
        )),
        -32602,
        "not a file"
    );
    // A position far outside the text is clamped, not a crash.
    let r = lsp.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": uri}, "position": {"line": 99999, "character": 99999}}),
    );
    assert!(r.get("result").is_some(), "{r}");
    // Notifications with bad parameters are dropped; the server goes on.
    lsp.notify("textDocument/didChange", json!({"bogus": true}));
    lsp.notify("textDocument/didOpen", json!(null));
    lsp.sync();
    assert!(lsp.is_running());

    // After shutdown only exit is expected: a request is an error; exit ends with 0.
    let r = lsp.request("shutdown", json!(null));
    assert_eq!(r["result"], Value::Null);
    assert_eq!(error(lsp.request("textDocument/hover", at)), -32600);
    lsp.notify("exit", json!(null));
    assert_eq!(lsp.wait().code(), Some(0));
}

#[test]
fn exit_without_shutdown_or_a_closed_input_ends_with_1() {
    let (_dir, ws) = webapp();
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    lsp.notify("exit", json!(null));
    assert_eq!(lsp.wait().code(), Some(1));
    let (lsp, _) = Lsp::start(KILN, &ws);
    assert_eq!(lsp.wait().code(), Some(1));
}

/// The golden case folders of testdata/ (a folder with an `expected.yaml` or
/// `expected-errors.txt`), as golden.rs finds them.
fn case_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() && !p.is_symlink() {
            if p.join("expected.yaml").exists() || p.join("expected-errors.txt").exists() {
                out.push(p.clone());
            }
            case_dirs(&p, out);
        }
    }
}

/// The protocol's range of a diagnostic of `kiln validate --diagnostics json`, computed here
/// from the file's text: 1-based lines and character columns to 0-based lines and UTF-16
/// units; without an end, the end of the line.
fn expected_range(d: &Value, text: &str) -> Value {
    let Some(line) = d["line"].as_u64() else {
        return range(0, 0, 0);
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let at = |line: u64, column: Option<u64>| {
        let l = lines
            .get(line as usize - 1)
            .map_or("", |l| l.strip_suffix('\r').unwrap_or(l));
        let chars = column.map_or(l.chars().count(), |c| c as usize - 1);
        let units: usize = l.chars().take(chars).map(char::len_utf16).sum();
        json!({"line": line - 1, "character": units})
    };
    let start = at(line, Some(d["column"].as_u64().unwrap_or(1)));
    let end = match (d["end_line"].as_u64(), d["end_column"].as_u64()) {
        (Some(l), Some(c)) => at(l, Some(c)),
        _ => at(line, None),
    };
    json!({"start": start, "end": end})
}

/// One source of truth: for every case folder of testdata/, the diagnostics `kiln lsp`
/// publishes for the folder as a workspace are those of `kiln validate --diagnostics json`
/// for the folder: the same files, codes, severities, messages (with the hint) and ranges, in
/// the same order; and what names no file is shown as a message.
#[test]
fn published_diagnostics_are_kiln_validates_for_every_case() {
    let mut cases = Vec::new();
    case_dirs(&root().join("testdata").canonicalize().unwrap(), &mut cases);
    assert!(cases.len() > 100, "{} cases", cases.len());
    let mut failures = Vec::new();
    let mut compared = 0;
    for case in &cases {
        let out = crate::common::kiln(
            case,
            &["validate", "--diagnostics", "json", case.to_str().unwrap()],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want: Vec<Value> = if stderr.trim_start().starts_with('{') {
            let json = &stderr[stderr.find('{').unwrap()..stderr.rfind('}').unwrap() + 1];
            serde_json::from_str::<Value>(json).unwrap()["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let (mut lsp, _) = Lsp::start(KILN, case);
        let got = lsp.sync();
        let mut by_file: std::collections::BTreeMap<String, Vec<Value>> = Default::default();
        let mut unplaced = Vec::new();
        for d in &want {
            match d["file"].as_str() {
                Some(f) => by_file.entry(f.to_string()).or_default().push(d.clone()),
                None => unplaced.push(d.clone()),
            }
        }
        let published: Vec<&Value> = got
            .iter()
            .filter(|n| n["method"] == "textDocument/publishDiagnostics")
            .collect();
        if published.len() != by_file.len() {
            failures.push(format!(
                "{}: {} file(s) published, kiln validate names {}",
                case.display(),
                published.len(),
                by_file.len()
            ));
        }
        for (file, ds) in &by_file {
            let uri = file_uri(Path::new(file));
            let text = String::from_utf8_lossy(&fs::read(file).unwrap_or_default()).into_owned();
            let Some(got) = Lsp::published(&got, &uri) else {
                failures.push(format!("{}: nothing published for {file}", case.display()));
                continue;
            };
            let expect: Vec<Value> = ds
                .iter()
                .map(|d| {
                    let message = match d["hint"].as_str() {
                        Some(h) => format!("{}\nhint: {h}", d["message"].as_str().unwrap()),
                        None => d["message"].as_str().unwrap().to_string(),
                    };
                    json!({
                        "code": d["code"],
                        "severity": if d["severity"] == "error" { 1 } else { 2 },
                        "message": message,
                        "range": expected_range(d, &text),
                    })
                })
                .collect();
            let got: Vec<Value> = got
                .iter()
                .map(|d| {
                    json!({"code": d["code"], "severity": d["severity"],
                           "message": d["message"], "range": d["range"]})
                })
                .collect();
            if got != expect {
                failures.push(format!(
                    "{}: {file}\n  kiln validate: {expect:#?}\n  kiln lsp: {got:#?}",
                    case.display()
                ));
            }
            compared += ds.len();
        }
        if !unplaced.is_empty() {
            let shown: Vec<String> = got
                .iter()
                .filter(|n| n["method"] == "window/showMessage")
                .map(|n| n["params"]["message"].as_str().unwrap_or("").to_string())
                .collect();
            for d in &unplaced {
                let message = d["message"].as_str().unwrap();
                if !shown.iter().any(|s| s.contains(message)) {
                    failures.push(format!("{}: not shown: {message}", case.display()));
                }
            }
            compared += unplaced.len();
        }
        assert!(lsp.shutdown().success());
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(compared > 100, "only {compared} diagnostics compared");
}

/// A small seeded generator (xorshift64*): the same edits on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// 1,000 seeded random edits of two open files (truncations, `${`, unbalanced quotes and
/// brackets, tabs, characters of several UTF-16 units, positions past the end and inside a
/// surrogate pair), each followed by a request: every request is answered, the server never
/// exits, and afterwards it still checks a file right.
#[test]
fn random_edits_never_crash_or_hang_the_server() {
    let (_dir, ws) = webapp();
    let files = [ws.join("rgd.yaml"), ws.join("instances.yaml")];
    let uris: Vec<String> = files.iter().map(|f| file_uri(f)).collect();
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    let mut lines = Vec::new();
    for (f, uri) in files.iter().zip(&uris) {
        let text = fs::read_to_string(f).unwrap();
        lines.push(text.lines().count() as u64 + 2);
        lsp.open(uri, &text);
    }
    let inserts = [
        "${",
        "}",
        "\"",
        "'",
        "\t",
        "\n",
        "${schema.spec.",
        ": ",
        "- ",
        "[",
        "{",
        "é😀",
        "|",
        "",
    ];
    let mut rng = Rng(0x6b69_6c6e_2d6c_7370);
    for i in 0..1000u64 {
        let f = rng.below(2) as usize;
        let pos = |rng: &mut Rng, lines: u64| json!({"line": rng.below(lines), "character": rng.below(90)});
        let start = pos(&mut rng, lines[f]);
        let change = match rng.below(4) {
            // Truncate from a point to the end.
            0 => {
                json!({"range": {"start": start, "end": {"line": 100000, "character": 0}}, "text": ""})
            }
            // Delete a span (its end may come before its start).
            1 => json!({"range": {"start": start, "end": pos(&mut rng, lines[f])}, "text": ""}),
            // Insert.
            _ => {
                let text = inserts[rng.below(inserts.len() as u64) as usize];
                json!({"range": {"start": start, "end": start}, "text": text})
            }
        };
        lsp.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uris[f], "version": i + 2}, "contentChanges": [change]}),
        );
        let at = json!({"textDocument": {"uri": uris[f]}, "position": pos(&mut rng, lines[f])});
        let (method, params) = match i % 5 {
            0 => ("textDocument/hover", at),
            1 => ("textDocument/completion", at),
            2 => ("textDocument/definition", at),
            3 => (
                "textDocument/documentSymbol",
                json!({"textDocument": {"uri": uris[f]}}),
            ),
            _ => (
                "textDocument/codeAction",
                json!({"textDocument": {"uri": uris[f]}, "range": {"start": pos(&mut rng, lines[f]), "end": pos(&mut rng, lines[f])}, "context": {"diagnostics": []}}),
            ),
        };
        let r = lsp.request(method, params);
        assert!(
            r.get("result").is_some() || r.get("error").is_some(),
            "edit {i}: {method}: {r}"
        );
        assert!(
            r["error"]["code"] != -32603,
            "edit {i}: {method} failed inside the server: {r}"
        );
        lsp.take_notifications();
    }
    assert!(lsp.is_running());
    // No handler failed and was caught: a panic is a bug even when the server survives it.
    let log = lsp.log();
    assert!(!log.contains("a bug") && !log.contains("KLN9001"), "{log}");
    // Still right: a known text gives its known diagnostic.
    let bad = fs::read_to_string(&files[0])
        .unwrap()
        .replace("${schema.spec.replicas}", "${schema.spec.replica}");
    lsp.change_all(&uris[1], 2000, &fs::read_to_string(&files[1]).unwrap());
    let ds = Lsp::published(&lsp.change_all(&uris[0], 2001, &bad), &uris[0]).expect("published");
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert_eq!(ds[0]["code"], "KLN3008");
    assert!(lsp.shutdown().success());
}

#[test]
fn settings_paths_stay_inside_the_workspace_folder() {
    // Editor settings can come with the repository: a CRD path that leaves the folder is not
    // read, and the editor is told so.
    let (dir, ws) = webapp();
    let outside = dir.path().canonicalize().unwrap().join("outside.yaml");
    fs::write(&outside, "not: read\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, ws.join("link.yaml")).unwrap();
    let (mut lsp, _) = Lsp::start_with(
        KILN,
        &ws,
        json!({"crds": ["../outside.yaml", outside.to_str().unwrap(), "link.yaml"]}),
    );
    let notes = lsp.sync();
    let shown: Vec<&str> = notes
        .iter()
        .filter(|n| n["method"] == "window/showMessage")
        .map(|n| n["params"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(shown.len(), 3, "{notes:#?}");
    assert!(shown[0].contains("\"../outside.yaml\" leaves the workspace folder"));
    assert!(shown[1].contains("leaves the workspace folder"));
    #[cfg(unix)]
    assert!(shown[2].contains("through a symbolic link"), "{}", shown[2]);
    assert!(lsp.shutdown().success());
}

#[test]
fn a_kurel_packages_unsaved_files_are_checked() {
    // The files a package reads (its parameters, resources and patches) are read from the
    // editor's buffers too, not only the files of the folder's walk.
    let saved = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: app\ndata:\n  replicas: \"${app.replicas}\"\n";
    let (_dir, ws, file) =
        crate::lsp_queries::kurel_package("app:\n  replicas: 2\n", "config.yaml", saved);
    let uri = file_uri(&file);
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    let published = lsp.open(&uri, saved);
    assert_eq!(Lsp::published(&published, &uri), None, "{published:?}");
    let typed = saved.replace("${app.replicas}", "${app.replica}");
    let published = lsp.change_all(&uri, 2, &typed);
    let ds = Lsp::published(&published, &uri).expect("the unsaved resource is checked");
    assert_eq!(ds.len(), 1, "{ds:#?}");
    assert!(
        ds[0]["message"].as_str().unwrap().contains("app.replica"),
        "{:#}",
        ds[0]
    );
    // The parameters file unsaved too: declaring the name clears it.
    let params = file_uri(&ws.join("parameters.yaml"));
    lsp.open(&params, "app:\n  replicas: 2\n");
    let published = lsp.change_all(&params, 2, "app:\n  replicas: 2\n  replica: 3\n");
    assert_eq!(Lsp::published(&published, &uri), Some(Vec::new()));
    assert!(lsp.shutdown().success());
}

#[test]
fn a_uri_outside_the_folder_is_not_read() {
    // A position in a file the editor names but the folder does not hold: the server answers
    // without reading it (`/dev/zero` would never end).
    let (_dir, ws) = webapp();
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    let r = lsp.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": "file:///dev/zero"}, "position": {"line": 0, "character": 0}}),
    );
    assert_eq!(r["result"], Value::Null, "{r}");
    assert!(lsp.shutdown().success());
}
