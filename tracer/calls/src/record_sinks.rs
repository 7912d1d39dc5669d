//! Sinks of completed calls as [`CallRecord`]s: JSON lines on the output (`--json`), the
//! saved-calls file (`--output`), and an in-memory collection (reports).

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use crate::saved_format::{ArgValue, CallEnd, CallRecord, InlineSite, RecordSink};
use crate::sink::{CallView, Kind, Note, Sink};

/// The record of a completed call (a close with its entry, or a leaf); `None` otherwise.
pub fn record_of(c: &CallView<'_>) -> Option<CallRecord> {
    if c.kind == Kind::Open || c.entry_missing {
        return None;
    }
    let info = c.func;
    let (func, module) = info.saved_names();
    Some(CallRecord {
        id: c.id,
        parent: c.parent,
        func: func.to_string(),
        demangled: info.demangled().map(str::to_string),
        module: module.map(str::to_string),
        cpu: c.entry_cpu.or(c.task.cpu),
        comm: c.task.comm.map(str::to_string),
        pid: c.task.pid,
        tgid: c.task.process,
        depth: c.depth,
        time_ns: c.time_ns,
        duration_ns: c.duration_ns,
        args: c
            .args
            .iter()
            .map(|(n, v)| ArgValue {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect(),
        ret: c.ret.map(str::to_string),
        ret_raw: c.ret_raw.map(str::to_string),
        out: c
            .outs
            .into_iter()
            .flat_map(|o| o.iter())
            .map(|(n, v)| ArgValue {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect(),
        error: c.error,
        origin: c.origin.map(|o| o.id),
        decoded: info.func.is_some(),
        inline: c.inlined.map(|i| InlineSite {
            container: i.container.to_string(),
            file: i.file.to_string(),
            line: i.line,
        }),
        ctx: c.ctx,
        irq_ns: c.irq_ns,
        lost: c.lost,
        ended: c.exec.then_some(CallEnd::Exec),
        stack: c.stack.map(<[_]>::to_vec),
        space: info.space,
    })
}

/// Append the saved-calls line of a completed call, newline included: the bytes
/// [`saved_format::write_record`](crate::saved_format::write_record) writes for [`record_of`]'s record, without building it (a
/// session writes a line per call, hundreds of thousands: the record's strings are not
/// copied, its keys not escaped). False, nothing appended, when `c` is not a completed
/// call. The fields and their order are [`CallRecord`]'s.
pub fn write_record_line(out: &mut Vec<u8>, c: &CallView<'_>) -> bool {
    if c.kind == Kind::Open || c.entry_missing {
        return false;
    }
    let (func, module) = c.func.saved_names();
    out.extend_from_slice(b"{\"id\":");
    json::number(out, c.id);
    out.extend_from_slice(b",\"parent\":");
    json::opt_number(out, c.parent);
    out.extend_from_slice(b",\"func\":");
    json::string(out, func);
    // Left out when absent (`skip_serializing_if`), as for C names.
    if let Some(d) = c.func.demangled() {
        out.extend_from_slice(b",\"demangled\":");
        json::string(out, d);
    }
    out.extend_from_slice(b",\"module\":");
    json::opt_string(out, module);
    out.extend_from_slice(b",\"cpu\":");
    json::opt_number(out, c.entry_cpu.or(c.task.cpu));
    out.extend_from_slice(b",\"comm\":");
    json::opt_string(out, c.task.comm);
    out.extend_from_slice(b",\"pid\":");
    json::opt_number(out, c.task.pid);
    // Left out when absent (`skip_serializing_if`).
    if let Some(p) = c.task.process {
        out.extend_from_slice(b",\"tgid\":");
        json::number(out, p);
    }
    out.extend_from_slice(b",\"depth\":");
    json::number(out, c.depth);
    out.extend_from_slice(b",\"time_ns\":");
    json::opt_number(out, c.time_ns);
    out.extend_from_slice(b",\"duration_ns\":");
    json::opt_number(out, c.duration_ns);
    out.extend_from_slice(b",\"args\":");
    push_values(out, c.args);
    out.extend_from_slice(b",\"ret\":");
    json::opt_string(out, c.ret);
    out.extend_from_slice(b",\"ret_raw\":");
    json::opt_string(out, c.ret_raw);
    // Left out when empty (`skip_serializing_if`).
    if let Some(outs) = c.outs.filter(|o| !o.is_empty()) {
        out.extend_from_slice(b",\"out\":");
        push_values(out, outs);
    }
    out.extend_from_slice(b",\"error\":");
    json::boolean(out, c.error);
    out.extend_from_slice(b",\"origin\":");
    json::opt_number(out, c.origin.map(|o| o.id));
    out.extend_from_slice(b",\"decoded\":");
    json::boolean(out, c.func.func.is_some());
    out.extend_from_slice(b",\"inline\":");
    match c.inlined {
        Some(i) => {
            out.extend_from_slice(b"{\"in\":");
            json::string(out, i.container);
            out.extend_from_slice(b",\"file\":");
            json::string(out, i.file);
            out.extend_from_slice(b",\"line\":");
            json::number(out, i.line);
            out.push(b'}');
        }
        None => out.extend_from_slice(b"null"),
    }
    // Left out when absent (`skip_serializing_if`).
    if let Some(ctx) = c.ctx {
        out.extend_from_slice(b",\"ctx\":");
        json::string(out, ctx.name());
    }
    if let Some(ns) = c.irq_ns {
        out.extend_from_slice(b",\"irq_ns\":");
        json::number(out, ns);
    }
    if let Some(n) = c.lost {
        out.extend_from_slice(b",\"lost\":");
        json::number(out, n);
    }
    if c.exec {
        out.extend_from_slice(b",\"ended\":");
        json::string(out, CallEnd::Exec.name());
    }
    if let Some(stack) = c.stack {
        out.extend_from_slice(b",\"stack\":[");
        for (i, f) in stack.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"func\":");
            json::string(out, &f.func);
            out.extend_from_slice(b",\"offset\":");
            json::opt_number(out, f.offset);
            out.extend_from_slice(b",\"module\":");
            json::opt_string(out, f.module.as_deref());
            out.extend_from_slice(b",\"inline\":");
            json::boolean(out, f.inline);
            if f.cut {
                out.extend_from_slice(b",\"cut\":true");
            }
            out.push(b'}');
        }
        out.push(b']');
    }
    if let Some(space) = c.func.space {
        out.extend_from_slice(b",\"space\":");
        json::string(out, space.name());
    }
    out.extend_from_slice(b"}\n");
    true
}

/// `[{"name":…,"value":…},…]`: arguments, output parameters.
fn push_values(out: &mut Vec<u8>, values: &crate::sink::ArgList) {
    out.push(b'[');
    for (i, (name, value)) in values.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"name\":");
        json::string(out, name);
        out.extend_from_slice(b",\"value\":");
        json::string(out, value);
        out.push(b'}');
    }
    out.push(b']');
}

/// JSON values written as `serde_json` writes them (compact).
mod json {
    /// A number in decimal.
    pub fn number(out: &mut Vec<u8>, v: impl Into<u64>) {
        let mut buf = [0u8; 20];
        out.extend_from_slice(dcg_render::decimal(&mut buf, v.into()));
    }

    pub fn opt_number(out: &mut Vec<u8>, v: Option<impl Into<u64>>) {
        match v {
            Some(v) => number(out, v),
            None => out.extend_from_slice(b"null"),
        }
    }

    pub fn boolean(out: &mut Vec<u8>, v: bool) {
        out.extend_from_slice(if v { &b"true"[..] } else { &b"false"[..] });
    }

    /// A string in quotes, escaped as `serde_json` escapes: quotes, backslashes and the
    /// control characters (short forms such as `\n`, else `\u00XX`), nothing else.
    pub fn string(out: &mut Vec<u8>, s: &str) {
        out.push(b'"');
        let bytes = s.as_bytes();
        // Most strings need no escape: one branch-free pass decides.
        let plain = bytes
            .iter()
            .fold(true, |ok, &b| ok & (b >= 0x20) & (b != b'"') & (b != b'\\'));
        if plain {
            out.extend_from_slice(bytes);
        } else {
            escaped(out, bytes);
        }
        out.push(b'"');
    }

    #[cold]
    fn escaped(out: &mut Vec<u8>, bytes: &[u8]) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let short: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0..=0x1f => b"",
                _ => continue,
            };
            out.extend_from_slice(&bytes[start..i]);
            start = i + 1;
            if short.is_empty() {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            } else {
                out.extend_from_slice(short);
            }
        }
        out.extend_from_slice(&bytes[start..]);
    }

    pub fn opt_string(out: &mut Vec<u8>, s: Option<&str>) {
        match s {
            Some(s) => string(out, s),
            None => out.extend_from_slice(b"null"),
        }
    }
}

/// `--json`: one record per completed call on the output.
#[derive(Debug, Default)]
pub struct JsonLines;

impl Sink for JsonLines {
    fn call(&mut self, c: &CallView<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        write_record_line(out, c);
        Ok(())
    }

    fn note(&mut self, _: &Note<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }

    fn wants_args_at_close(&self) -> bool {
        true
    }

    fn takes_json_lines(&self) -> bool {
        true
    }

    fn json_line(&mut self, line: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        out.extend_from_slice(line);
        Ok(())
    }
}

/// `--output FILE`: the saved-calls stream (header, then a record per completed call).
pub struct SavedCalls<'w> {
    sink: RecordSink<'w>,
}

impl<'w> SavedCalls<'w> {
    /// Start the stream on `out` with a header naming `source`.
    pub fn new(out: Box<dyn Write + 'w>, source: &str) -> io::Result<SavedCalls<'w>> {
        Ok(SavedCalls {
            sink: RecordSink::new(out, source)?,
        })
    }
}

impl Sink for SavedCalls<'_> {
    fn call(&mut self, c: &CallView<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        self.sink.write_line_with(|buf| {
            write_record_line(buf, c);
        })
    }

    fn note(&mut self, _: &Note<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }

    fn wants_args_at_close(&self) -> bool {
        true
    }

    fn finish(&mut self, _: &mut Vec<u8>) -> io::Result<()> {
        self.sink.flush()
    }

    fn takes_json_lines(&self) -> bool {
        true
    }

    fn json_line(&mut self, line: &[u8], _: &mut Vec<u8>) -> io::Result<()> {
        self.sink.write_line(line)
    }
}

/// Completed calls collected in memory, in completion order (reports). The records are
/// taken through the [`Collected`] handle once the stream has ended.
#[derive(Debug, Default)]
pub struct Collect {
    records: Rc<RefCell<Vec<CallRecord>>>,
}

/// The handle to what a [`Collect`] sink gathered.
#[derive(Debug, Clone)]
pub struct Collected(Rc<RefCell<Vec<CallRecord>>>);

impl Collect {
    /// An empty collection.
    pub fn new() -> Collect {
        Collect::default()
    }

    /// The handle to take the records from.
    pub fn handle(&self) -> Collected {
        Collected(Rc::clone(&self.records))
    }
}

impl Collected {
    /// The records gathered so far (taken out).
    pub fn take(&self) -> Vec<CallRecord> {
        std::mem::take(&mut self.0.borrow_mut())
    }
}

impl Sink for Collect {
    fn call(&mut self, c: &CallView<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        if let Some(r) = record_of(c) {
            self.records.borrow_mut().push(r);
        }
        Ok(())
    }

    fn note(&mut self, _: &Note<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }

    fn wants_args_at_close(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::funcs::FuncTable;
    use crate::saved_format::{Context, StackFrame};
    use crate::sink::{ArgList, Inlined, Origin, Task};
    use dcg_dbset::DbSet;
    use sigdb::{Db, DbBuilder, FuncFlags, FunctionDesc, ModuleDesc, ModuleKind, TypeDesc};

    /// vmlinux's `f` (its symbol `f.isra.0`) and a module's `g`.
    fn db() -> Db {
        let mut b = DbBuilder::new(62);
        let void = b.add_type(TypeDesc::void());
        for (module, kind, name, symbol) in [
            ("vmlinux", ModuleKind::Kernel, "f", Some("f.isra.0")),
            ("ext4", ModuleKind::KernelModule, "g", None),
        ] {
            let m = b.add_module(ModuleDesc {
                name: module.into(),
                kind,
                build_id: vec![],
                base: 0,
            });
            b.add_function(FunctionDesc {
                module: m,
                addr: 0x1000,
                size: 16,
                name: name.into(),
                symbol: symbol.map(Into::into),
                ret: void,
                params: vec![],
                flags: FuncFlags::empty(),
            });
        }
        Db::from_bytes(b.finish().unwrap()).unwrap()
    }

    #[test]
    fn record_lines_are_the_records_serialized() {
        let set = DbSet::new(vec![db()]);
        let mut funcs = FuncTable::new(&set);
        let ids = [
            funcs.intern("f", None),
            funcs.intern("g", Some("ext4")),
            funcs.intern("unknown \"fn\"", None),
        ];
        // Sources that know the function name its module themselves.
        let labelled = funcs.intern_function(set.by_name("f").next().unwrap(), Some("mod"));
        let mut args = ArgList::default();
        args.push("path", "\"/tmp/a\\b\"\n\t\r\u{8}\u{c}\u{1}\u{1f}\u{7f} é ✓");
        args.push("", "...");
        let empty = ArgList::default();
        let task = Task {
            key: 1,
            pid: Some(42),
            comm: Some("a\"b"),
            cpu: Some(3),
            process: Some(40),
        };
        let base = |func| CallView {
            id: 7,
            parent: Some(3),
            depth: 2,
            name: "f",
            ret: Some("-ENOENT"),
            ret_raw: Some("0xfffffffffffffffe"),
            error: true,
            time_ns: Some(u64::MAX),
            duration_ns: Some(0),
            ..CallView::new(Kind::Leaf, func, task, &empty, 1)
        };
        let mut views: Vec<CallView<'_>> = ids
            .iter()
            .chain([&labelled])
            .map(|&id| base(funcs.get(id)))
            .collect();
        let f = funcs.get(ids[0]);
        views.push(CallView {
            kind: Kind::Close,
            parent: None,
            args: &args,
            ret: None,
            ret_raw: None,
            error: false,
            origin: Some(Origin {
                id: 9,
                func: f,
                errno: None,
            }),
            time_ns: None,
            duration_ns: None,
            entry_cpu: Some(1),
            task: Task {
                key: 1,
                pid: None,
                comm: None,
                cpu: None,
                process: None,
            },
            inlined: Some(Inlined {
                container: "outer",
                file: "fs/a\\b.c",
                line: 12,
            }),
            ctx: Some(Context::Softirq),
            irq_ns: Some(5),
            lost: Some(u64::MAX),
            ..base(f)
        });
        for ctx in [Context::Task, Context::Irq, Context::Nmi] {
            views.push(CallView {
                ctx: Some(ctx),
                ..base(f)
            });
        }
        // A top-level call's stack: an inline frame, then the frame holding it.
        let stack = [
            StackFrame {
                func: "do_sys_open".into(),
                offset: None,
                module: None,
                inline: true,
                cut: false,
            },
            StackFrame {
                func: "__x64_sys_openat".into(),
                offset: Some(0x55),
                module: Some("m\"od".into()),
                inline: false,
                cut: true,
            },
        ];
        // Output parameters, and an empty list (left out).
        let mut outs = ArgList::default();
        outs.push("out", "8087");
        outs.push("p", "{x=\"a\", y=?}");
        for o in [&outs, &empty] {
            views.push(CallView {
                outs: Some(o),
                ..base(f)
            });
        }
        views.push(CallView {
            parent: None,
            depth: 0,
            stack: Some(&stack),
            ..base(f)
        });
        let mut lines = Vec::new();
        for v in &views {
            let mut direct = Vec::new();
            assert!(write_record_line(&mut direct, v));
            let mut serialized = Vec::new();
            crate::saved_format::write_record(&mut serialized, &record_of(v).unwrap()).unwrap();
            let direct = String::from_utf8(direct).unwrap();
            assert_eq!(direct, String::from_utf8(serialized).unwrap());
            lines.push(direct);
        }
        assert!(lines.last().unwrap().ends_with(
            r#","stack":[{"func":"do_sys_open","offset":null,"module":null,"inline":true},{"func":"__x64_sys_openat","offset":85,"module":"m\"od","inline":false,"cut":true}]}
"#
        ));
        // The db's functions are named by symbol, with their module.
        assert!(lines[0].contains(r#""func":"f.isra.0","module":null,"#));
        assert!(lines[1].contains(r#""func":"g","module":"ext4","#));
        assert!(lines[2].contains(r#""decoded":false"#));
        assert!(lines[3].contains(r#""func":"f.isra.0","module":"mod","#));
        let n = lines.len();
        assert!(lines[n - 3].contains(
            r#""ret_raw":"0xfffffffffffffffe","out":[{"name":"out","value":"8087"},{"name":"p","value":"{x=\"a\", y=?}"}],"error""#
        ));
        assert!(!lines[n - 2].contains(r#""out""#));
        // Neither an open call nor a return without its entry is a record.
        for v in [
            CallView {
                kind: Kind::Open,
                ..base(f)
            },
            CallView {
                entry_missing: true,
                ..base(f)
            },
        ] {
            let mut out = Vec::new();
            assert!(!write_record_line(&mut out, &v) && out.is_empty());
            assert!(record_of(&v).is_none());
        }
    }
}
