//! Per-node log files: every command run on a node, its exit code and its output.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::CommandOutput;

/// The log of one node, `<dir>/<node>.log`, appended to. Cloning shares the file.
///
/// Nothing secret reaches it: commands never carry passwords (sudo runs with `-n`, passwords
/// only travel inside the SSH authentication exchange).
#[derive(Debug, Clone, Default)]
pub struct NodeLog {
    file: Option<Arc<Mutex<File>>>,
    path: Option<PathBuf>,
}

impl NodeLog {
    /// Opens (creating `dir` if needed) the log of `node` in `dir`.
    pub fn open(dir: &Path, node: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{node}.log"));
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Self {
            file: Some(Arc::new(Mutex::new(file))),
            path: Some(path),
        })
    }

    /// A log that writes nowhere.
    pub fn discard() -> Self {
        Self::default()
    }

    /// Where the log is written, if anywhere.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Appends one line, stamped with the time.
    pub(super) fn line(&self, text: &str) {
        self.write(&format!("{:.3} {text}\n", jiff::Timestamp::now()));
    }

    /// Appends a command's exit code and output.
    pub(super) fn output(&self, output: &CommandOutput) {
        let code = output
            .code
            .map_or_else(|| "signal".to_owned(), |c| c.to_string());
        let mut text = format!("exit {code}\n");
        for (name, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            if !bytes.is_empty() {
                text.push_str("--- ");
                text.push_str(name);
                text.push('\n');
                text.push_str(&String::from_utf8_lossy(bytes));
                if !bytes.ends_with(b"\n") {
                    text.push('\n');
                }
            }
        }
        self.write(&text);
    }

    fn write(&self, text: &str) {
        // A log that cannot be written must not fail the install step it records.
        if let Some(file) = &self.file
            && let Ok(mut file) = file.lock()
        {
            let _ = file.write_all(text.as_bytes());
        }
    }
}
