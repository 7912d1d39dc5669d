//! function_graph records in ring-buffer pages: `funcgraph_entry` (with `args[]` under
//! `funcgraph-args`), `fgraph_retaddr_entry` (under `funcgraph-retaddr`), `funcgraph_exit`
//! (with `retval` on kernels with `CONFIG_FUNCTION_GRAPH_RETVAL`), and `print` (trace
//! markers). Layouts come from the event formats.

use crate::format::{read_uint, Format};
use crate::page::Record;
use crate::RingError;

/// The context a record was written in, from its `common_flags` (the kernel's
/// `TRACE_FLAG_*` bits, the same since Linux 4.x: hardirq 0x08, softirq 0x10 — serving
/// one —, NMI 0x40).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordContext {
    /// Process context.
    Task,
    /// A hard interrupt.
    Irq,
    /// A softirq being served.
    Softirq,
    /// A non-maskable interrupt.
    Nmi,
}

/// The context of a record with `common_flags` `flags`.
pub fn context_of(flags: u8) -> RecordContext {
    if flags & 0x40 != 0 {
        RecordContext::Nmi
    } else if flags & 0x08 != 0 {
        RecordContext::Irq
    } else if flags & 0x10 != 0 {
        RecordContext::Softirq
    } else {
        RecordContext::Task
    }
}

/// Deeper than any depth the kernel records: function_graph keeps a task's return
/// addresses on a shadow stack of one page (before Linux 6.9, an array of 50 entries),
/// at least two words a call, so even a 64 KiB page holds fewer than 4096 calls. A record
/// that says more is corrupt; [`GraphFormats::decode`] refuses it (a depth of 4 billion
/// would otherwise be printed as 8 GB of indentation).
pub const MAX_DEPTH: u32 = 4096;

/// A function_graph record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphRecord<'a> {
    /// A function was entered.
    Entry {
        /// Task id.
        pid: u32,
        /// Time stamp (ns).
        ts: u64,
        /// Address of the function.
        func: u64,
        /// Call depth.
        depth: u32,
        /// Return address (`fgraph_retaddr_entry`).
        retaddr: Option<u64>,
        /// Argument words (`funcgraph-args`), in parameter order.
        args: Vec<u64>,
        /// The record's context flags (`common_flags`, see [`context_of`]).
        flags: u8,
    },
    /// A function returned.
    Exit {
        /// Task id.
        pid: u32,
        /// Time stamp (ns).
        ts: u64,
        /// Address of the function.
        func: u64,
        /// Call depth.
        depth: u32,
        /// Return value (kernels with `CONFIG_FUNCTION_GRAPH_RETVAL`).
        retval: Option<u64>,
        /// Entry time (ns).
        calltime: u64,
        /// Return time (ns).
        rettime: u64,
        /// The record's context flags (`common_flags`, see [`context_of`]).
        flags: u8,
    },
    /// A trace marker (`print`).
    Print {
        /// Task id.
        pid: u32,
        /// Time stamp (ns).
        ts: u64,
        /// Its text.
        text: &'a str,
    },
    /// Any other event.
    Other {
        /// Event type id.
        id: u16,
    },
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    id: u16,
    func: usize,
    depth: (usize, usize),
    retaddr: Option<usize>,
    args: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
struct Exit {
    id: u16,
    func: usize,
    retval: Option<usize>,
    depth: (usize, usize),
    calltime: usize,
    rettime: usize,
}

/// The layouts of the function_graph events of one kernel.
#[derive(Debug, Clone)]
pub struct GraphFormats {
    entry: Entry,
    retaddr_entry: Option<Entry>,
    exit: Exit,
    print: Option<(u16, usize)>,
    pid: usize,
    flags: usize,
}

impl GraphFormats {
    /// From the kernel's `events/ftrace/*/format` files.
    pub fn new(formats: &[Format]) -> Result<GraphFormats, RingError> {
        let find = |name: &str| formats.iter().find(|f| f.name == name);
        let missing = |name: &str| RingError::Format {
            event: name.to_string(),
            what: "no such event".into(),
        };
        let entry_of = |f: &Format| -> Result<Entry, RingError> {
            let depth = f.require("depth")?;
            Ok(Entry {
                id: f.id,
                func: f.require("func")?.offset,
                depth: (depth.offset, depth.size),
                retaddr: f.field("retaddr").map(|x| x.offset),
                args: f.field("args").map(|x| x.offset),
            })
        };
        let entry_format = find("funcgraph_entry").ok_or_else(|| missing("funcgraph_entry"))?;
        let exit_format = find("funcgraph_exit").ok_or_else(|| missing("funcgraph_exit"))?;
        let depth = exit_format.require("depth")?;
        let exit = Exit {
            id: exit_format.id,
            func: exit_format.require("func")?.offset,
            retval: exit_format.field("retval").map(|x| x.offset),
            depth: (depth.offset, depth.size),
            calltime: exit_format.require("calltime")?.offset,
            rettime: exit_format.require("rettime")?.offset,
        };
        Ok(GraphFormats {
            entry: entry_of(entry_format)?,
            retaddr_entry: find("fgraph_retaddr_entry").map(entry_of).transpose()?,
            exit,
            print: find("print").and_then(|f| Some((f.id, f.field("buf")?.offset))),
            pid: entry_format.require("common_pid")?.offset,
            // After the type (2 bytes) in every kernel's common header.
            flags: entry_format.field("common_flags").map_or(2, |f| f.offset),
        })
    }

    /// The function_graph record of `rec`, or `None` when it is too short for its event
    /// or corrupt (a depth of [`MAX_DEPTH`] or more).
    pub fn decode<'a>(&self, rec: &Record<'a>) -> Option<GraphRecord<'a>> {
        let d = rec.data;
        let id = read_uint(d, 0, 2)? as u16;
        let pid = read_uint(d, self.pid, 4)? as u32;
        let flags = read_uint(d, self.flags, 1)? as u8;
        let word = |at: usize| read_uint(d, at, 8);
        let entry = match (&self.retaddr_entry, id) {
            (_, i) if i == self.entry.id => Some(&self.entry),
            (Some(r), i) if i == r.id => Some(r),
            _ => None,
        };
        if let Some(e) = entry {
            let args = match e.args {
                Some(at) if d.len() > at => d[at..]
                    .chunks_exact(8)
                    .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                    .collect(),
                _ => Vec::new(),
            };
            return Some(GraphRecord::Entry {
                pid,
                ts: rec.ts,
                func: word(e.func)?,
                depth: depth_of(read_uint(d, e.depth.0, e.depth.1)?)?,
                retaddr: e.retaddr.and_then(word),
                args,
                flags,
            });
        }
        if id == self.exit.id {
            let x = &self.exit;
            return Some(GraphRecord::Exit {
                pid,
                ts: rec.ts,
                func: word(x.func)?,
                depth: depth_of(read_uint(d, x.depth.0, x.depth.1)?)?,
                retval: match x.retval {
                    Some(at) => Some(word(at)?),
                    None => None,
                },
                calltime: word(x.calltime)?,
                rettime: word(x.rettime)?,
                flags,
            });
        }
        if let Some((_, buf)) = self.print.filter(|(i, _)| *i == id) {
            let bytes = d.get(buf..)?;
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            let text = std::str::from_utf8(&bytes[..end]).ok()?;
            return Some(GraphRecord::Print {
                pid,
                ts: rec.ts,
                text: text.trim_end_matches('\n'),
            });
        }
        Some(GraphRecord::Other { id })
    }
}

/// A record's depth, `None` when no kernel could have recorded it.
fn depth_of(raw: u64) -> Option<u32> {
    u32::try_from(raw).ok().filter(|&d| d < MAX_DEPTH)
}
