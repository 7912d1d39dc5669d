//! Bounded reading of line-based inputs (function_graph text, saved calls): no line
//! longer than [`MAX_LINE`] is ever held, so an endless input without newlines
//! (`/dev/zero` through a pipe, a file of zeros) ends in an error naming its line instead
//! of eating the machine.

use std::io::{BufRead, ErrorKind};

/// The longest line a reader takes: 1 MiB. function_graph lines are a few hundred bytes
/// (the kernel's own `trace_seq` holds one page); a saved call with every argument
/// rendered stays far below.
pub const MAX_LINE: usize = 1 << 20;

/// The error for line `line` (1-based) over [`MAX_LINE`].
pub fn too_long(line: u64) -> std::io::Error {
    std::io::Error::new(
        ErrorKind::InvalidData,
        format!("line {line}: longer than 1 MiB, not a trace or saved-calls line"),
    )
}

/// Lines of a reader, each at most [`MAX_LINE`] bytes (without its `\n`).
pub struct Lines<R> {
    input: R,
    buf: Vec<u8>,
    number: u64,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `input`.
    pub fn new(input: R) -> Lines<R> {
        Lines {
            input,
            buf: Vec::new(),
            number: 0,
        }
    }

    /// The 1-based number of the line last returned.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The next line without its `\n` (and `\r`), `None` at the end of the input; an
    /// error for a line over [`MAX_LINE`].
    pub fn next_line(&mut self) -> std::io::Result<Option<&[u8]>> {
        self.buf.clear();
        let mut any = false;
        loop {
            let chunk = match self.input.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(p) => (p, true),
                None => (chunk.len(), false),
            };
            if self.buf.len() + take > MAX_LINE {
                return Err(too_long(self.number + 1));
            }
            self.buf.extend_from_slice(&chunk[..take]);
            self.input.consume(take + usize::from(done));
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(&self.buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_the_cap() {
        let mut l = Lines::new(&b"a\r\nbb\n\nc"[..]);
        let mut got = Vec::new();
        while let Some(line) = l.next_line().unwrap() {
            got.push(String::from_utf8(line.to_vec()).unwrap());
        }
        assert_eq!(got, ["a", "bb", "", "c"]);
        assert_eq!(l.number(), 4);

        let mut long = b"ok\n".to_vec();
        long.resize(3 + MAX_LINE + 1, b'a');
        let mut l = Lines::new(std::io::BufReader::with_capacity(4096, &long[..]));
        assert_eq!(l.next_line().unwrap(), Some(&b"ok"[..]));
        let e = l.next_line().unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: longer than 1 MiB, not a trace or saved-calls line"
        );
        let mut exact = vec![b'a'; MAX_LINE];
        exact.push(b'\n');
        assert_eq!(
            Lines::new(&exact[..]).next_line().unwrap().map(<[u8]>::len),
            Some(MAX_LINE)
        );
    }
}
