//! A progress line on stderr for long renders (thousands of units), so a person at a terminal sees
//! that work is happening. It appears only when stderr is a terminal, `CI` is not set and the
//! render has taken more than a second; pipes, CI logs and quick runs never see it, and it is
//! cleared before anything else is printed.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a render runs before the progress line appears.
const DELAY: Duration = Duration::from_secs(1);

/// Progress of one render: counts units as the workers finish them.
pub struct Progress {
    /// `None` when progress is never shown (not a terminal, or CI).
    bar: Option<ProgressBar>,
    started: Instant,
    shown: AtomicBool,
}

impl Progress {
    /// Start counting; shows nothing yet.
    pub fn start() -> Self {
        let wanted = wanted(
            std::io::stderr().is_terminal(),
            std::env::var_os("CI").is_some(),
        );
        let bar = wanted.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} rendered {human_pos} units ({per_sec}, {elapsed})",
                )
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        Self {
            bar,
            started: Instant::now(),
            shown: AtomicBool::new(false),
        }
    }

    /// One unit rendered (called from the workers).
    pub fn unit_done(&self) {
        let Some(bar) = &self.bar else {
            return;
        };
        bar.inc(1);
        if !self.shown.load(Ordering::Relaxed)
            && self.started.elapsed() >= DELAY
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(100));
        }
    }

    /// Clear the line (before diagnostics or output are written).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Whether progress may be shown at all: on a terminal, outside CI.
fn wanted(stderr_is_terminal: bool, in_ci: bool) -> bool {
    stderr_is_terminal && !in_ci
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_on_a_terminal_outside_ci() {
        assert!(wanted(true, false));
        assert!(!wanted(false, false));
        assert!(!wanted(true, true));
        assert!(!wanted(false, true));
    }

    #[test]
    fn appears_only_after_the_delay_and_counts_units() {
        let quick = Progress {
            bar: Some(ProgressBar::hidden()),
            started: Instant::now(),
            shown: AtomicBool::new(false),
        };
        quick.unit_done();
        assert!(!quick.shown.load(Ordering::Relaxed));

        let long = Progress {
            bar: Some(ProgressBar::hidden()),
            started: Instant::now() - DELAY * 2,
            shown: AtomicBool::new(false),
        };
        long.unit_done();
        long.unit_done();
        assert!(long.shown.load(Ordering::Relaxed));
        assert_eq!(long.bar.as_ref().map(ProgressBar::position), Some(2));
        long.finish();
        assert!(long.bar.as_ref().is_some_and(ProgressBar::is_finished));
    }
}
