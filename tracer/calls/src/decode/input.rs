//! Reading the input: `Decoder::decode_stream` takes whole buffers from a reader, checks
//! the complete lines of each for UTF-8 at once and splits them in place. Only a line cut
//! by the buffer end is copied; a line that is not UTF-8 goes out unchanged as bytes. A
//! line over [`MAX_LINE`] ends the stream with an error naming it.

use std::io::{BufRead, Write};

use super::Decoder;
use super::OUT_CHUNK;
use crate::lines::{too_long, MAX_LINE};

impl<'a> Decoder<'a> {
    /// Decode every line of `input`.
    ///
    /// Reads whole buffers: the complete lines of each are checked for UTF-8 at once and
    /// split in place; only a line cut by the buffer end is copied.
    pub fn decode_stream(
        &mut self,
        mut input: impl BufRead,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let mut carry: Vec<u8> = Vec::new();
        loop {
            // Everything decoded so far goes out before a read that may block.
            self.flush_out(out)?;
            let buf = match input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let n = buf.len();
            if n == 0 {
                if !carry.is_empty() {
                    self.bytes_line(&carry, out)?;
                }
                return self.flush_out(out);
            }
            let mut start = 0;
            if !carry.is_empty() {
                match memchr::memchr(b'\n', buf) {
                    None => {
                        if carry.len() + n > MAX_LINE {
                            return Err(too_long(self.lines + 1));
                        }
                        carry.extend_from_slice(buf);
                        input.consume(n);
                        continue;
                    }
                    Some(p) => {
                        if carry.len() + p > MAX_LINE {
                            return Err(too_long(self.lines + 1));
                        }
                        carry.extend_from_slice(&buf[..p]);
                        self.bytes_line(&carry, out)?;
                        carry.clear();
                        start = p + 1;
                    }
                }
            }
            let rest = &buf[start..];
            let end = memchr::memrchr(b'\n', rest).map_or(0, |p| p + 1);
            self.block(&rest[..end], out)?;
            if rest.len() - end > MAX_LINE {
                return Err(too_long(self.lines + 1));
            }
            carry.extend_from_slice(&rest[end..]);
            input.consume(n);
        }
    }

    /// Complete lines (each ending in `\n`).
    fn block(&mut self, mut b: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
        while !b.is_empty() {
            match std::str::from_utf8(b) {
                Ok(s) => return self.str_lines(s, out),
                Err(e) => {
                    // The lines before the bad one are fine; the bad one goes out raw.
                    let good = e.valid_up_to();
                    let ls = memchr::memrchr(b'\n', &b[..good]).map_or(0, |p| p + 1);
                    if let Ok(s) = std::str::from_utf8(&b[..ls]) {
                        self.str_lines(s, out)?;
                    }
                    let le = memchr::memchr(b'\n', &b[good..]).map_or(b.len(), |p| good + p);
                    self.bytes_line(&b[ls..le], out)?;
                    b = b.get(le + 1..).unwrap_or(&[]);
                }
            }
        }
        Ok(())
    }

    /// Complete lines (each ending in `\n`), already checked.
    fn str_lines(&mut self, s: &str, out: &mut dyn Write) -> std::io::Result<()> {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let e = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |p| i + p);
            let line = s.get(i..e).unwrap_or("");
            let line = line.strip_suffix('\r').unwrap_or(line);
            self.line(line)?;
            if self.pipe.buffered() >= OUT_CHUNK {
                self.flush_out(out)?;
            }
            i = e + 1;
        }
        Ok(())
    }

    /// One line of unchecked bytes, without (or with) its `\n`.
    fn bytes_line(&mut self, raw: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
        let body = raw.strip_suffix(b"\n").unwrap_or(raw);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        match std::str::from_utf8(body) {
            Ok(line) => self.line(line),
            Err(_) => {
                self.lines += 1;
                if !self.opts.json && !self.opts.errors_only {
                    self.flush_out(out)?;
                    out.write_all(body)?;
                    out.write_all(b"\n")?;
                }
                Ok(())
            }
        }
    }
}
