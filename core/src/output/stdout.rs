//! Every door's answer, and how it reaches stdout: one shape ([`Outcome`]), one writer
//! ([`write_stdout`]), one exit code for a reader that went away ([`EXIT_BROKEN_PIPE`]) and one
//! diagnostic for a failed write, which each door prints in its own words.

use std::io::{self, IoSlice, Write};

use crate::diag::{codes, Diagnostic};

use super::EXIT_BROKEN_PIPE;

/// What a door's run prints and how it exits. `Out` is what stdout gets: text (kiln-krm's
/// ResourceList, kiln-cmp's manifests) or bytes (kiln-flux's artifact is a gzip archive).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome<Out = String> {
    /// Standard output.
    pub stdout: Out,
    /// Standard error.
    pub stderr: String,
    /// The exit code when stdout is written: 0 success, 1 failure, 2 usage.
    pub code: u8,
}

impl<Out: AsRef<[u8]>> Outcome<Out> {
    /// Write stderr, then stdout, and say how the process exits ([`write_stdout`]).
    pub fn print(&self, say: impl FnOnce(&Diagnostic) -> String) -> u8 {
        let _ = io::stderr().write_all(self.stderr.as_bytes());
        write_stdout(&[&self.stdout], self.code, say)
    }
}

/// Write `pieces` to stdout, in order, and flush: the exit code of the run is then `code`. A
/// reader that went away (`kiln render | head`) makes it [`EXIT_BROKEN_PIPE`], without a
/// message; any other failure (a full device, a bad descriptor) makes it 1, with the door's
/// words for [`cannot_write`] on stderr (`say`). Either way the reader did not get the whole
/// answer, which a door must never let pass for success.
pub fn write_stdout<P: AsRef<[u8]>>(
    pieces: &[P],
    code: u8,
    say: impl FnOnce(&Diagnostic) -> String,
) -> u8 {
    let written = write_pieces(&mut io::stdout().lock(), pieces);
    match written {
        Ok(()) => code,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => EXIT_BROKEN_PIPE,
        Err(e) => {
            let mut line = say(&cannot_write(&e));
            if !line.ends_with('\n') {
                line.push('\n');
            }
            let _ = io::stderr().write_all(line.as_bytes());
            1
        }
    }
}

/// A failed write of stdout (KLN1001, `cannot write output: …`).
pub fn cannot_write(e: &io::Error) -> Diagnostic {
    Diagnostic::error(codes::IO_READ, format!("cannot write output: {e}"))
        .in_file("<stdout>")
        .with_hint("check the device or file stdout goes to (its space, its permissions)")
}

/// Write the pieces in order, a few hundred to a system call (`writev`), without copying them
/// into a buffer first: at 10 000 instances the copy through a `BufWriter` was a sixth of what
/// the main thread did alone while the workers waited.
pub fn write_pieces<P: AsRef<[u8]>>(out: &mut impl Write, pieces: &[P]) -> io::Result<()> {
    for batch in pieces.chunks(512) {
        let mut slices: Vec<IoSlice<'_>> = batch
            .iter()
            .map(AsRef::as_ref)
            .filter(|p| !p.is_empty())
            .map(IoSlice::new)
            .collect();
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            match out.write_vectored(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most 7 bytes a call, across slices, and is interrupted every
    /// third call: what a pipe or a signal can do to `writev`.
    #[derive(Default)]
    struct Trickle {
        out: Vec<u8>,
        calls: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            self.calls += 1;
            if self.calls % 3 == 0 {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let mut room = 7;
            for b in bufs {
                let n = b.len().min(room);
                self.out.extend_from_slice(&b[..n]);
                room -= n;
                if room == 0 {
                    break;
                }
            }
            Ok(7 - room)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Every piece is written whole and in order, empty pieces and batches of 512 included,
    /// however little each call takes.
    #[test]
    fn pieces_are_written_whole_and_in_order() {
        let texts: Vec<String> = (0..1300)
            .map(|i| match i % 5 {
                0 => String::new(),
                k => format!("piece {i}: {}\n", "x".repeat(k * 3)),
            })
            .collect();
        let pieces: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut w = Trickle::default();
        write_pieces(&mut w, &pieces).unwrap();
        assert_eq!(String::from_utf8(w.out).unwrap(), texts.concat());
    }
}
