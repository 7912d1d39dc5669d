//! function_graph records in ring-buffer pages: `funcgraph_entry` (with `args[]` under
//! `funcgraph-args`), `fgraph_retaddr_entry` (under `funcgraph-retaddr`), `funcgraph_exit`
//! (with `retval` on kernels with `CONFIG_FUNCTION_GRAPH_RETVAL`), `print` (trace
//! markers) and `kernel_stack` (a `FUNC:stacktrace` probe's stack). Layouts come from the
//! event formats.

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
    /// A kernel stack (`kernel_stack`, written by a `FUNC:stacktrace` function probe):
    /// return addresses, innermost first, the kernel's trampoline marks left out.
    Stack {
        /// Task id.
        pid: u32,
        /// Time stamp (ns).
        ts: u64,
        /// The addresses.
        ips: Vec<u64>,
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
    /// `kernel_stack`: its id, the offsets of `size` (entries) and `caller[]`.
    stack: Option<(u16, usize, usize)>,
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
            stack: find("kernel_stack")
                .and_then(|f| Some((f.id, f.field("size")?.offset, f.field("caller")?.offset))),
            pid: entry_format.require("common_pid")?.offset,
            // After the type (2 bytes) in every kernel's common header.
            flags: entry_format.field("common_flags").map_or(2, |f| f.offset),
        })
    }

    /// Whether the kernel's `kernel_stack` layout was given (stacks are decoded).
    pub fn has_stacks(&self) -> bool {
        self.stack.is_some()
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
        if let Some((_, size, caller)) = self.stack.filter(|(i, _, _)| *i == id) {
            return Some(GraphRecord::Stack {
                pid,
                ts: rec.ts,
                ips: stack_ips(d, size, caller)?,
            });
        }
        Some(GraphRecord::Other { id })
    }
}

/// The kernel's mark of an address in an ftrace trampoline (`FTRACE_TRAMPOLINE_MARKER`,
/// `INT_MAX`), and the end mark older kernels filled the array with (`ULONG_MAX`).
const TRAMPOLINE_MARK: u64 = i32::MAX as u64;

/// The addresses of a `kernel_stack` record `d`: `size` entries (the format declares
/// eight; the kernel writes as many as it took, fewer or more) from `caller`, no further than
/// the record goes; trampoline marks left out, an end mark ends them.
fn stack_ips(d: &[u8], size: usize, caller: usize) -> Option<Vec<u64>> {
    let n = read_uint(d, size, 4)? as usize;
    let words = d.get(caller..)?.chunks_exact(8).take(n);
    Some(
        words
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            .take_while(|&a| a != u64::MAX)
            .filter(|&a| a != TRAMPOLINE_MARK)
            .collect(),
    )
}

/// A record's depth, `None` when no kernel could have recorded it.
fn depth_of(raw: u64) -> Option<u32> {
    u32::try_from(raw).ok().filter(|&d| d < MAX_DEPTH)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format(name: &str, id: u16, fields: &[(&str, usize, usize)]) -> Format {
        let mut text = format!(
            "name: {name}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\t\
             size:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
        );
        for (decl, offset, size) in fields {
            text += &format!("\tfield:{decl};\toffset:{offset};\tsize:{size};\tsigned:0;\n");
        }
        Format::parse(&text).unwrap()
    }

    /// A `kernel_stack` record as the kernel writes it: `size` entries of the declared
    /// eight, a trampoline mark among them.
    #[test]
    fn stack_records_hold_what_the_kernel_took() {
        let formats = [
            format(
                "funcgraph_entry",
                11,
                &[("unsigned long func", 8, 8), ("int depth", 16, 4)],
            ),
            format(
                "funcgraph_exit",
                10,
                &[
                    ("unsigned long func", 8, 8),
                    ("int depth", 16, 4),
                    ("unsigned long long calltime", 24, 8),
                    ("unsigned long long rettime", 32, 8),
                ],
            ),
            format(
                "kernel_stack",
                4,
                &[("int size", 8, 4), ("unsigned long caller[8]", 16, 64)],
            ),
        ];
        let g = GraphFormats::new(&formats).unwrap();
        let mut d = vec![0u8; 16];
        d[0] = 4;
        d[4..8].copy_from_slice(&77u32.to_le_bytes());
        d[8..12].copy_from_slice(&3u32.to_le_bytes());
        for a in [
            0xffff_ffff_8100_0010u64,
            TRAMPOLINE_MARK,
            0xffff_ffff_8100_0020,
            9,
        ] {
            d.extend_from_slice(&a.to_le_bytes());
        }
        let rec = Record { ts: 5, data: &d };
        let want = GraphRecord::Stack {
            pid: 77,
            ts: 5,
            ips: vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020],
        };
        assert_eq!(g.decode(&rec), Some(want));
        // A record shorter than its size says: what it holds.
        let short = Record {
            ts: 5,
            data: &d[..24],
        };
        assert!(matches!(g.decode(&short), Some(GraphRecord::Stack { ips, .. }) if ips.len() == 1));
    }
}
