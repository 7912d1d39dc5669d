//! The saved-calls format: decoded calls as versioned JSON lines.
//!
//! A file starts with one header line, `{"dcg":"calls","version":1,...}`, followed by one
//! [`CallRecord`] per completed call, in completion order (children before their
//! parent). `dcg decode --json` prints the records without the header; `--output FILE`
//! (decode and trace) writes header and records to FILE.

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

/// Format name in the header.
pub const FORMAT: &str = "calls";
/// Current version.
pub const VERSION: u32 = 1;

/// The first line of a saved-calls file.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Always [`FORMAT`].
    pub dcg: String,
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// Where the calls came from (a file name, `trace_pipe`, a command).
    pub source: String,
}

/// One argument, rendered by its type.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ArgValue {
    /// Parameter name (empty when the trace gave none).
    pub name: String,
    /// Rendered value (`-100`, `NULL`, `"/etc/passwd"`), or the raw text when unknown.
    pub value: String,
}

/// One completed call.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// Call id, unique in the file, assigned in entry order.
    pub id: u64,
    /// Id of the calling function's call, when it was traced too.
    pub parent: Option<u64>,
    /// Function (ELF symbol name: clones keep their suffix).
    pub func: String,
    /// `func` demangled in full, for a C++ or Rust symbol (`int ns::get<int>(ns::Box<int>)`);
    /// absent for C names and in files written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demangled: Option<String>,
    /// Module for module functions.
    pub module: Option<String>,
    /// CPU, when the trace shows it.
    pub cpu: Option<u32>,
    /// Task command name, when the trace shows it.
    pub comm: Option<String>,
    /// Task id, when the trace shows it.
    pub pid: Option<u32>,
    /// The task's process (thread group) id, when the source knows it (live traces);
    /// absent otherwise and in files written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tgid: Option<u32>,
    /// Call depth (0: a traced top-level call).
    pub depth: u32,
    /// Entry timestamp in ns, when the trace shows it.
    pub time_ns: Option<u64>,
    /// Duration in ns, when the trace shows it.
    pub duration_ns: Option<u64>,
    /// Arguments.
    pub args: Vec<ArgValue>,
    /// Return value rendered by type; `None` for void or unknown.
    pub ret: Option<String>,
    /// Return value as the trace printed it.
    pub ret_raw: Option<String>,
    /// Output parameters (`--deref`, `--fields`): what each non-const pointer parameter
    /// pointed to when the call returned, by the parameter's name; `?` where the engine
    /// could not read it. Absent when there are none, and in files written before this
    /// field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out: Vec<ArgValue>,
    /// The return value is an error code or `ERR_PTR`.
    pub error: bool,
    /// A top-level call that returned an error: id of the call where the error first
    /// appeared ([`crate::origin`]; its own id when no callee returned it). Files written
    /// before this field read as `None`.
    #[serde(default)]
    pub origin: Option<u64>,
    /// The function's signature was found in the db.
    pub decoded: bool,
    /// An inline frame: the code of `func` inlined into another function, and where.
    /// Files written before this field read as `None`.
    #[serde(default)]
    pub inline: Option<InlineSite>,
    /// The context the call ran in, where the source tells it (kernel engines): absent
    /// in files written before this field and for sources that do not know it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctx: Option<Context>,
    /// Of that duration, the time interrupts took in the call (hardirqs, softirqs, NMIs
    /// that ran in its task's tree below it; kernel engines that know the context).
    /// Absent when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_ns: Option<u64>,
    /// Calls the capture lost inside this call, below it included (the BPF engine: runs
    /// of its program the kernel skipped while it recorded them, what an interrupt
    /// arriving then ran). Absent when none were lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// How a call that never returned ended, when the source knows: `"exec"`, its
    /// program called `exec` (the process went on as another program). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<CallEnd>,
    /// A top-level call's stack (`--stack`), innermost first: `stack[0]` is its caller,
    /// not the call itself. Absent without `--stack` and on calls below the top.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<Vec<StackFrame>>,
    /// Where the call ran, in a session that traced user and kernel functions together;
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space: Option<Space>,
}

/// A frame of a top-level call's stack.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Hash)]
pub struct StackFrame {
    /// The function (its symbol; an inline frame: the inlined function).
    pub func: String,
    /// The return address's offset in `func`; null for an inline frame.
    pub offset: Option<u64>,
    /// The kernel module (null: the kernel image), or a user frame's ELF file name.
    pub module: Option<String>,
    /// The code of `func` inlined into the frame that follows (the next one in the
    /// list, which holds the return address).
    pub inline: bool,
    /// The stack was cut short here: it goes on above this frame, but no more of it was
    /// copied (a user-space stack deeper than the engine copies).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

impl StackFrame {
    /// The frame as printers show it: `func+0xoff [module]`, an inline frame
    /// `func (inlined)`.
    pub fn push_label(&self, s: &mut String) {
        use std::fmt::Write as _;
        s.push_str(&self.func);
        if let Some(off) = self.offset {
            let _ = write!(s, "+{off:#x}");
        }
        if let Some(m) = &self.module {
            s.push_str(" [");
            s.push_str(m);
            s.push(']');
        }
        if self.inline {
            s.push_str(" (inlined)");
        }
        if self.cut {
            s.push_str(" (stack cut short)");
        }
    }

    /// [`StackFrame::push_label`] as a string.
    pub fn label(&self) -> String {
        let mut s = String::new();
        self.push_label(&mut s);
        s
    }
}

/// How a call ended without returning, where the source knows it.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum CallEnd {
    /// Its program called `exec`.
    Exec,
}

impl CallEnd {
    /// Its name in saved calls: `exec`.
    pub fn name(self) -> &'static str {
        match self {
            CallEnd::Exec => "exec",
        }
    }
}

/// Where a call ran in a session that traces both sides (issue 42): `"user"` or
/// `"kernel"`.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Space {
    /// A function of the traced program or its libraries.
    User,
    /// A kernel function the program's thread ran (a system call, an interrupt).
    Kernel,
}

impl Space {
    /// Its name in saved calls: `user`, `kernel`.
    pub fn name(self) -> &'static str {
        match self {
            Space::User => "user",
            Space::Kernel => "kernel",
        }
    }
}

/// The context a kernel call ran in: `"task"`, `"irq"` (hardirq), `"softirq"`, `"nmi"`.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Context {
    /// Process context (system calls, kernel threads).
    Task,
    /// Hard interrupt.
    Irq,
    /// Softirq (bottom half).
    Softirq,
    /// Non-maskable interrupt.
    Nmi,
}

impl Context {
    /// Its name in saved calls: `task`, `irq`, `softirq`, `nmi`.
    pub fn name(self) -> &'static str {
        match self {
            Context::Task => "task",
            Context::Irq => "irq",
            Context::Softirq => "softirq",
            Context::Nmi => "nmi",
        }
    }

    /// Whether a call in this context, made under a call in `caller`'s (the one below it
    /// on its CPU), begins an interrupt subtree inside another context's tree: an
    /// interrupt context under a different known one. Printers and reports mark where
    /// such a subtree begins.
    pub fn begins_subtree(self, caller: Option<Context>) -> bool {
        self != Context::Task && caller.is_some_and(|b| b != self)
    }
}

/// Where an inline frame's code is.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct InlineSite {
    /// The function whose code holds the inlined copy.
    #[serde(rename = "in")]
    pub container: String,
    /// Source file of the call site (empty when unknown).
    pub file: String,
    /// Its line (0 when unknown).
    pub line: u32,
}

/// Errors reading a saved-calls file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// I/O failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A line is not valid.
    #[error("line {line}: {what}")]
    Invalid {
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        what: String,
    },
}

/// Write the header line.
pub fn write_header(out: &mut dyn Write, source: &str) -> std::io::Result<()> {
    let h = Header {
        dcg: FORMAT.into(),
        version: VERSION,
        source: source.into(),
    };
    serde_json::to_writer(&mut *out, &h)?;
    out.write_all(b"\n")
}

/// Write one record line. Generic over the writer so that serializing into a `Vec`
/// inlines each of the many small writes a record makes.
pub fn write_record<W: Write + ?Sized>(out: &mut W, r: &CallRecord) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, r)?;
    out.write_all(b"\n")
}

/// A saved-calls stream being written: the header first, then one line per record. Lines
/// are gathered and go to `out` in writes of about [`RecordSink::CHUNK`] bytes (a session
/// writes hundreds of thousands of records: one system call a line, or a few per 8 KiB
/// buffer, is the bulk of the cost on an emulated CPU).
pub struct RecordSink<'a> {
    out: Box<dyn Write + 'a>,
    /// Lines not yet written to `out`.
    buf: Vec<u8>,
}

impl<'a> RecordSink<'a> {
    /// Bytes gathered before a write.
    pub const CHUNK: usize = 256 << 10;

    /// Start a stream on `out` with a header naming `source`.
    pub fn new(mut out: Box<dyn Write + 'a>, source: &str) -> std::io::Result<RecordSink<'a>> {
        write_header(&mut *out, source)?;
        Ok(RecordSink {
            out,
            buf: Vec::with_capacity(Self::CHUNK + 4096),
        })
    }

    /// Append a record.
    pub fn write(&mut self, r: &CallRecord) -> std::io::Result<()> {
        write_record(&mut self.buf, r)?;
        self.write_full()
    }

    /// Append a record line that `write` appends to the buffer it is given.
    pub fn write_line_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> std::io::Result<()> {
        write(&mut self.buf);
        self.write_full()
    }

    /// Append a record already written as its line ([`write_record`]).
    pub fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.buf.extend_from_slice(line);
        self.write_full()
    }

    fn write_full(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= Self::CHUNK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Write and flush what was appended.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }
}

impl Drop for RecordSink<'_> {
    /// What was appended and not flushed is written, as a `BufWriter` does when dropped
    /// (errors are for [`RecordSink::flush`] to report).
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            let _ = self.out.write_all(&self.buf);
            let _ = self.out.flush();
        }
    }
}

/// Whether the first line of a file looks like a saved-calls header.
pub fn is_header(line: &str) -> bool {
    serde_json::from_str::<Header>(line).is_ok_and(|h| h.dcg == FORMAT)
}

/// Read a saved-calls file: the header, then every record.
pub fn read(input: impl BufRead) -> Result<(Header, Vec<CallRecord>), RecordError> {
    let mut lines = crate::lines::Lines::new(input);
    let first = lines.next_line()?.unwrap_or_default();
    let header: Header = serde_json::from_slice(first).map_err(|e| RecordError::Invalid {
        line: 1,
        what: format!("not a dcg saved-calls header: {e}"),
    })?;
    if header.dcg != FORMAT {
        return Err(RecordError::Invalid {
            line: 1,
            what: format!("format '{}' is not '{FORMAT}'", header.dcg),
        });
    }
    if header.version != VERSION {
        return Err(RecordError::Invalid {
            line: 1,
            what: format!(
                "version {} is not supported (this dcg reads {VERSION})",
                header.version
            ),
        });
    }
    let mut records = Vec::new();
    while let Some(line) = lines.next_line()? {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let r: CallRecord = serde_json::from_slice(line).map_err(|e| RecordError::Invalid {
            line: lines.number(),
            what: e.to_string(),
        })?;
        records.push(r);
    }
    Ok((header, records))
}
