//! A language server seen as an editor sees it: a process spoken to in framed JSON-RPC
//! (`Content-Length` headers) over its stdin and stdout, every wait bounded by a timeout so a
//! server that hangs fails the test instead of stalling it.
//!
//! Notifications arrive when the server sends them; to know that everything a change caused
//! has arrived, [`Lsp::sync`] sends a request the server answers after handling every message
//! before it (a server handles messages in order) and returns what came before the answer.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long any one answer may take: generous, for a busy 2-core CI machine.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// A running server.
pub struct Lsp {
    child: Child,
    stdin: Option<ChildStdin>,
    from_server: Receiver<Value>,
    next_id: i64,
    /// Notifications read while waiting for an answer, not yet taken.
    pending: Vec<Value>,
    /// What the server wrote on stderr (its log), as it writes it.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

/// The `file://` URI of an absolute path (percent-encoding what a path may hold that a URI
/// may not).
pub fn file_uri(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_str().expect("a UTF-8 path").bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Lsp {
    /// Start `program args` as a server; its stderr is kept ([`Lsp::log`]) and copied to the
    /// test's.
    pub fn spawn(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Lsp {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("stderr");
        let keep = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("server: {line}");
                let mut log = keep.lock().unwrap_or_else(|e| e.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            while let Some(v) = read_message(&mut r) {
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Lsp {
            stdin: child.stdin.take(),
            child,
            from_server: rx,
            next_id: 0,
            pending: Vec::new(),
            log,
        }
    }

    /// Start `kiln lsp` (`kiln` is the executable's path) and initialize it for the folder
    /// `root`; returns the server and the `initialize` result.
    pub fn start(kiln: impl AsRef<std::ffi::OsStr>, root: &Path) -> (Lsp, Value) {
        Lsp::start_with(kiln, root, json!(null))
    }

    /// [`Lsp::start`] with the editor's `initializationOptions`.
    pub fn start_with(
        kiln: impl AsRef<std::ffi::OsStr>,
        root: &Path,
        options: Value,
    ) -> (Lsp, Value) {
        let mut lsp = Lsp::spawn(kiln, &["lsp"]);
        let init = lsp.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": file_uri(root),
                "capabilities": {},
                "initializationOptions": options,
            }),
        );
        assert!(init.get("error").is_none(), "initialize failed: {init}");
        lsp.notify("initialized", json!({}));
        (lsp, init["result"].clone())
    }

    /// Send one message as it is.
    pub fn send(&mut self, msg: &Value) {
        let body = serde_json::to_string(msg).expect("a message serialises");
        let stdin = self.stdin.as_mut().expect("stdin is open");
        let framed = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        stdin
            .write_all(framed.as_bytes())
            .and_then(|()| stdin.flush())
            .expect("the server reads its input");
    }

    /// Send a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Send a request and wait for its response (the whole message: `result` or `error`);
    /// notifications that arrive meanwhile are kept for [`Lsp::take_notifications`].
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_server.recv_timeout(left) {
                Ok(v) if v.get("id") == Some(&json!(id)) && v.get("method").is_none() => return v,
                Ok(v) => self.pending.push(v),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no answer to {method} within {TIMEOUT:?}")
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the server closed its output before answering {method}")
                }
            }
        }
    }

    /// Wait for the first message (a notification, or a response to a request sent with
    /// [`Lsp::send`]) for which `wanted` holds; messages before it are kept as notifications.
    pub fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_server.recv_timeout(left) {
                Ok(v) if wanted(&v) => return v,
                Ok(v) => self.pending.push(v),
                Err(_) => panic!("the awaited message did not come within {TIMEOUT:?}"),
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The notifications received so far, in order.
    pub fn take_notifications(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.pending)
    }

    /// Wait until the server has handled everything sent before, and return the notifications
    /// it sent meanwhile.
    pub fn sync(&mut self) -> Vec<Value> {
        let answer = self.request("kiln/sync", json!(null));
        assert!(
            answer.get("error").is_some(),
            "kiln/sync is answered with an error: {answer}"
        );
        self.take_notifications()
    }

    /// The diagnostics last published for `uri` among `notifications`.
    pub fn published(notifications: &[Value], uri: &str) -> Option<Vec<Value>> {
        notifications
            .iter()
            .rev()
            .find(|n| n["method"] == "textDocument/publishDiagnostics" && n["params"]["uri"] == uri)
            .map(|n| {
                n["params"]["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
    }

    /// Open a document and return the notifications it caused.
    pub fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}}),
        );
        self.sync()
    }

    /// Replace a document's whole text and return the notifications it caused.
    pub fn change_all(&mut self, uri: &str, version: i64, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version},
                   "contentChanges": [{"text": text}]}),
        );
        self.sync()
    }

    /// `shutdown` then `exit`; the exit status, within the timeout.
    pub fn shutdown(mut self) -> ExitStatus {
        let r = self.request("shutdown", json!(null));
        assert!(r.get("error").is_none(), "shutdown failed: {r}");
        self.notify("exit", json!(null));
        self.wait()
    }

    /// Close the server's input and wait for it to end, within the timeout.
    pub fn wait(mut self) -> ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(s) = self.child.try_wait().expect("wait for the server") {
                return s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit within {TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the server wrote on stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("poll the server").is_none()
    }
}

impl Drop for Lsp {
    fn drop(&mut self) {
        // A test that failed midway leaves no server behind.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One framed message, or `None` at the end of the stream (or a frame that is not JSON).
fn read_message(r: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    r.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}
