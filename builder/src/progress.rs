//! Progress: a bar with bytes/s on a terminal, plain log lines otherwise.
//!
//! Downloads report "bytes so far" for themselves; [`Progress::tracker`] turns that into
//! increments of one shared bar, so parallel downloads add up to one throughput figure.

use std::io::IsTerminal as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The build's progress display.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar on stderr when it is a terminal, log lines otherwise.
    pub fn new() -> Self {
        if !std::io::stderr().is_terminal() {
            return Self { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{spinner} {msg:<24} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        Self { bar: Some(bar) }
    }

    /// No display at all (tests, `--quiet`).
    pub fn hidden() -> Self {
        Self { bar: None }
    }

    /// Announces a phase.
    pub fn phase(&self, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.to_owned());
        } else {
            tracing::info!("{message}");
        }
    }

    /// Adds `bytes` to the amount expected.
    pub fn expect_bytes(&self, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.inc_length(bytes);
        }
    }

    /// Reports that `what` is done.
    pub fn done(&self, what: &str, bytes: u64) {
        let line = format!("fetched {what} ({})", bytesize::ByteSize(bytes));
        if let Some(bar) = &self.bar {
            bar.println(format!("  {line}"));
        } else {
            tracing::info!("{line}");
        }
    }

    /// A callback for one download that feeds the shared bar.
    pub fn tracker(&self) -> impl Fn(u64, Option<u64>) + Send + Sync + use<> {
        let bar = self.bar.clone();
        let seen = Arc::new(AtomicU64::new(0));
        move |so_far, _total| {
            let before = seen.swap(so_far, Ordering::Relaxed);
            if let Some(bar) = &bar {
                bar.inc(so_far.saturating_sub(before));
            }
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}
