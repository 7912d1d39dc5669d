//! The ring file: created by dcg in `/dev/shm`, mapped shared by every traced process,
//! drained here. See [`crate::layout`] for the bytes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::MmapMut;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub use crate::clock::{mono_ns, tsc_usable, TscClock};
pub use crate::copier::Copier;
use crate::layout::*;
use crate::InprocError;

/// One record, as read from a ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `REC_*`.
    pub kind: u16,
    /// Plan index of the function.
    pub func: u32,
    /// `CLOCK_MONOTONIC` ns.
    pub ts: u64,
    /// CPU.
    pub cpu: u16,
    /// Thread.
    pub tid: u32,
    /// Process.
    pub pid: u32,
    /// The thread's name when it claimed its ring.
    pub comm: String,
    /// The values, still encoded (see [`values`]).
    pub payload: Vec<u8>,
}

/// A value of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawValue {
    /// A word.
    Word(u64),
    /// A string's bytes.
    Str(Vec<u8>),
    /// A string or block that could not be read.
    Fault,
    /// A block's bytes ([`FETCH_BLOCK`]): those copied.
    Bytes(Vec<u8>),
}

/// Decode a record's payload by the kinds of its fetch ops (`FETCH_*`).
pub fn values(payload: &[u8], kinds: impl Iterator<Item = u8>) -> Option<Vec<RawValue>> {
    let mut at = 0usize;
    let mut out = Vec::new();
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_ne_bytes(
            payload.get(at..at + 8)?.try_into().ok()?,
        ))
    };
    for kind in kinds {
        let w = word(at)?;
        at += 8;
        if kind != FETCH_STRING && kind != FETCH_BLOCK {
            out.push(RawValue::Word(w));
        } else if w == STRING_FAULT {
            out.push(RawValue::Fault);
        } else {
            let n = usize::try_from(w).ok()?;
            let bytes = payload.get(at..at.checked_add(n)?)?.to_vec();
            out.push(if kind == FETCH_BLOCK {
                RawValue::Bytes(bytes)
            } else {
                RawValue::Str(bytes)
            });
            at += n.div_ceil(8) * 8;
        }
    }
    Some(out)
}

/// A new file name of this session in `dir`: `dcg-inproc-PID-NANOS.WHAT`.
pub fn session_file(dir: &Path, what: &str) -> PathBuf {
    dir.join(format!(
        "{STALE_PREFIX}{}-{}.{what}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    ))
}

const STALE_PREFIX: &str = "dcg-inproc-";

/// Whether `path` is a file of a dcg session ([`session_file`]): the rings, the plan.
pub fn is_session_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(STALE_PREFIX))
}

/// Remove the files of sessions whose dcg is gone (killed before it could): returns
/// their names.
pub fn remove_stale(dir: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(STALE_PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() && std::fs::remove_file(e.path()).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// The ring file of a session, removed when dropped.
pub struct Rings {
    map: MmapMut,
    path: PathBuf,
    nrings: u32,
    ring_size: u32,
    /// Data bytes of each ring this mapping has in its page tables (see [`Rings::take`]).
    mapped: Vec<AtomicU32>,
}

impl Rings {
    /// Create `nrings` rings of `ring_size` bytes in a new file in `dir`.
    pub fn create(dir: &Path, nrings: u32, ring_size: u32) -> Result<Rings, InprocError> {
        let ring_size = ring_size.div_ceil(8) * 8;
        let path = session_file(dir, "rings");
        let io = |error| InprocError::File {
            path: path.display().to_string(),
            error,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io)?;
        let len = ring_offset(nrings, ring_size);
        let made = file.set_len(len as u64).and_then(|()| {
            // SAFETY: a file this session just created; every process that maps it
            // writes only through atomics or into rings it owns.
            unsafe { MmapMut::map_mut(&file) }
        });
        let mut map = match made {
            Ok(m) => m,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(io(e));
            }
        };
        let h = ShmHeader::mut_from_prefix(&mut map[..])
            .expect("sized above")
            .0;
        h.magic = SHM_MAGIC;
        h.nrings = nrings;
        h.ring_size = ring_size;
        Ok(Rings {
            map,
            path,
            nrings,
            ring_size,
            mapped: (0..nrings).map(|_| AtomicU32::new(0)).collect(),
        })
    }

    /// The file the recorder maps ([`ENV_SHM`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        // SAFETY: in bounds and 4-aligned (the layout's fields), in a mapping that lives
        // as long as self; other processes access it only atomically.
        unsafe { AtomicU32::from_ptr(self.map.as_ptr().add(off) as *mut u32) }
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        // SAFETY: as u32_at, 8-aligned.
        unsafe { AtomicU64::from_ptr(self.map.as_ptr().add(off) as *mut u64) }
    }

    /// Bytes of each ring's records.
    pub fn ring_size(&self) -> u32 {
        self.ring_size
    }

    /// Rings claimed so far (at most the number of rings).
    pub fn claimed(&self) -> u32 {
        self.u32_at(std::mem::offset_of!(ShmHeader, next_ring))
            .load(Ordering::Acquire)
            .min(self.nrings)
    }

    /// Threads that found no free ring and recorded nothing.
    pub fn threads_without_ring(&self) -> u32 {
        self.u32_at(std::mem::offset_of!(ShmHeader, next_ring))
            .load(Ordering::Acquire)
            .saturating_sub(self.nrings)
    }

    /// Threads whose new ring could not be backed by memory, and recorded nothing.
    pub fn no_space(&self) -> u32 {
        self.u32_at(std::mem::offset_of!(ShmHeader, no_space))
            .load(Ordering::Acquire)
    }

    /// Top-level calls the recorders' entry tests rejected (`--filter`), not recorded.
    pub fn rejected(&self) -> u64 {
        (0..self.claimed())
            .map(|i| {
                let at =
                    ring_offset(i, self.ring_size) + std::mem::offset_of!(RingHeader, rejected);
                self.u64_at(at).load(Ordering::Relaxed)
            })
            .sum()
    }

    /// Processes that loaded the recorder and hooked a traced binary.
    pub fn attached(&self) -> u32 {
        self.u32_at(std::mem::offset_of!(ShmHeader, attached))
            .load(Ordering::Acquire)
    }

    /// Functions a recorder could not hook.
    pub fn unhooked(&self) -> u32 {
        self.u32_at(std::mem::offset_of!(ShmHeader, unhooked))
            .load(Ordering::Acquire)
    }

    /// Plan indices of the functions recorders could not hook (the first
    /// [`UNHOOKED_SLOTS`], each once).
    pub fn unhooked_funcs(&self) -> Vec<u32> {
        let mut out: Vec<u32> = (0..self.unhooked().min(UNHOOKED_SLOTS))
            .map(|i| self.u32_at(unhooked_offset(i)).load(Ordering::Acquire))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Objects published since the last call (`seen`: how many were taken before): their
    /// process, path and load bias.
    pub fn new_objects(&self, seen: &mut u32) -> Vec<(u32, String, u64)> {
        let n = self
            .u32_at(std::mem::offset_of!(ShmHeader, next_object))
            .load(Ordering::Acquire)
            .min(OBJECT_SLOTS);
        let mut out = Vec::new();
        while *seen < n {
            let off = object_offset(*seen);
            if self
                .u32_at(off + std::mem::offset_of!(ObjectSlot, ready))
                .load(Ordering::Acquire)
                == 0
            {
                break;
            }
            let o = ObjectSlot::ref_from_prefix(&self.map[off..])
                .expect("in bounds")
                .0;
            let end = o.path.iter().position(|&c| c == 0).unwrap_or(o.path.len());
            out.push((
                o.pid,
                String::from_utf8_lossy(&o.path[..end]).into_owned(),
                o.bias,
            ));
            *seen += 1;
        }
        out
    }

    /// Tell every recorder to write nothing more.
    pub fn stop(&self) {
        self.u32_at(std::mem::offset_of!(ShmHeader, stopped))
            .store(1, Ordering::Release);
    }

    /// Records dropped because a ring was full, in all rings.
    pub fn lost(&self) -> u64 {
        (0..self.claimed())
            .map(|i| {
                self.u64_at(ring_offset(i, self.ring_size) + std::mem::offset_of!(RingHeader, lost))
                    .load(Ordering::Relaxed)
            })
            .sum()
    }

    /// Move the bytes recorded since the last call out of every ring, a [`Chunk`] per
    /// ring that had any, and free the rings whose thread ended once they are empty.
    /// Only copies: cheap enough to keep pace with a traced hot loop ([`Copier`]).
    /// Returns the bytes taken.
    pub fn take(&self, out: &mut Vec<Chunk>, spare: &mut Vec<Vec<u8>>) -> usize {
        self.take_with(|writer, first, second| {
            // A buffer whose pages are mapped already, when there is one.
            let n = first.len() + second.len();
            let mut bytes = spare.pop().unwrap_or_else(|| buffer_for(n));
            bytes.clear();
            bytes.reserve_exact(n);
            bytes.extend_from_slice(first);
            bytes.extend_from_slice(second);
            out.push(Chunk::new(writer, bytes));
        })
    }

    /// [`Rings::take`], handing each ring's new bytes to `f` where they lie (in two
    /// parts where they wrap around the ring's end) instead of copying them to a chunk.
    pub fn take_with(&self, mut f: impl FnMut(Writer, &[u8], &[u8])) -> usize {
        let mut taken = 0;
        let size = u64::from(self.ring_size);
        for i in 0..self.claimed() {
            let base = ring_offset(i, self.ring_size);
            let field = |off: usize| self.u32_at(base + off);
            if field(std::mem::offset_of!(RingHeader, ready)).load(Ordering::Acquire) == 0 {
                continue;
            }
            self.map_populated(i, base);
            // Read before `head`: a retired ring's last record is in by then.
            let state_at = field(std::mem::offset_of!(RingHeader, state));
            let state = state_at.load(Ordering::Acquire);
            let head = self
                .u64_at(base + std::mem::offset_of!(RingHeader, head))
                .load(Ordering::Acquire);
            let tail_at = self.u64_at(base + std::mem::offset_of!(RingHeader, tail));
            let tail = tail_at.load(Ordering::Relaxed);
            if head > tail {
                let r = RingHeader::ref_from_prefix(&self.map[base..])
                    .expect("in bounds")
                    .0;
                if head - tail > size {
                    // The target wrote over its ring's header: give the ring up.
                    log::warn!("ring {i}: head {head} is more than a ring past tail {tail}");
                } else {
                    let data = base + size_of::<RingHeader>();
                    let (from, n) = ((tail % size) as usize, (head - tail) as usize);
                    let first = n.min(size as usize - from);
                    let writer = Writer {
                        tid: r.tid,
                        pid: r.pid,
                        comm: r.comm,
                        clock: r.clock,
                    };
                    f(
                        writer,
                        &self.map[data + from..data + from + first],
                        &self.map[data..data + (n - first)],
                    );
                    taken += n;
                }
                tail_at.store(head, Ordering::Release);
            }
            if state == RING_RETIRED {
                field(std::mem::offset_of!(RingHeader, ready)).store(0, Ordering::Relaxed);
                state_at.store(RING_FREE, Ordering::Release);
            }
        }
        taken
    }

    /// What the recorder of ring `i` (at `base`) made sure of since the last look: into
    /// this mapping's page tables in one call instead of a fault per 4 KiB (slower than
    /// a hot loop writes).
    fn map_populated(&self, i: u32, base: usize) {
        let populated = self
            .u32_at(base + std::mem::offset_of!(RingHeader, populated))
            .load(Ordering::Acquire);
        let mapped = self.mapped[i as usize].fetch_max(populated, Ordering::Relaxed);
        if populated > mapped {
            self.map_range(base, mapped, populated, MADV_POPULATE_READ);
        }
    }

    /// Have the kernel back the header and first `bytes` of data of each of the first
    /// `rings` rings and map them into this mapping now, before a recorder claims them
    /// (it then finds the pages there): for a session where each page fault dcg takes
    /// while the command runs costs the command, as where a kernel side's programs run
    /// on the fault's path. The rest is mapped as recorders populate it.
    pub fn map_ahead(&self, rings: u32, bytes: u32) {
        let bytes = bytes.min(self.ring_size);
        for i in 0..rings.min(self.nrings) {
            let base = ring_offset(i, self.ring_size);
            self.map_range(base, 0, bytes, MADV_POPULATE_WRITE);
            self.mapped[i as usize].fetch_max(bytes, Ordering::Relaxed);
        }
    }

    /// `advice` on the pages of ring `base`'s data from `from` to `to` (its header's
    /// page too, from 0).
    fn map_range(&self, base: usize, from: u32, to: u32, advice: libc::c_int) {
        let data = base + size_of::<RingHeader>();
        let start = if from == 0 {
            base
        } else {
            data + from as usize
        } & !4095;
        let end = (data + to as usize).next_multiple_of(4096);
        // SAFETY: advice on pages of this mapping (`to` is at most the ring's size), which
        // changes none of their bytes.
        unsafe {
            libc::madvise(
                self.map.as_ptr().add(start) as *mut libc::c_void,
                end - start,
                advice,
            )
        };
    }

    /// Take every complete record from every ring, appending them to `out` in time order
    /// (each ring is in order; rings are merged by timestamp). Returns how many.
    pub fn drain(&self, clock: &TscClock, out: &mut Vec<Record>) -> usize {
        let mut chunks = Vec::new();
        self.take(&mut chunks, &mut Vec::new());
        records_of(&chunks, clock, out)
    }
}

/// `MADV_POPULATE_READ` and `_WRITE` (Linux 5.14), which the libc crate may not name.
const MADV_POPULATE_READ: libc::c_int = 22;
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// Takes under this many bytes get a buffer from the heap.
const SMALL_TAKE: usize = 1 << 20;

/// A buffer for a take of `n` bytes. A small one comes from the heap: a buffer of its
/// own, mapped and faulted in for a few kilobytes, costs a system call and page faults.
/// A large one is in huge pages ([`dcg_spool::huge_buffer`]).
fn buffer_for(n: usize) -> Vec<u8> {
    if n < SMALL_TAKE {
        Vec::with_capacity(n.max(64 << 10))
    } else {
        dcg_spool::huge_buffer(n)
    }
}

/// Who wrote a ring's bytes (as [`Rings::take_with`] hands them out, and as the
/// [`Copier`] keeps them before the bytes, in its native order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Writer {
    /// Thread.
    pub tid: u32,
    /// Process.
    pub pid: u32,
    /// The thread's name when it claimed the ring.
    pub comm: [u8; 16],
    /// What its timestamps are ([`CLOCK_MONO`], [`CLOCK_TSC`]).
    pub clock: u32,
}

/// The bytes one ring held, with who wrote them.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Thread.
    pub tid: u32,
    /// Process.
    pub pid: u32,
    /// The thread's name when it claimed the ring.
    pub comm: [u8; 16],
    /// What its timestamps are ([`CLOCK_MONO`], [`CLOCK_TSC`]).
    pub clock: u32,
    /// Whole records.
    pub bytes: Vec<u8>,
}

impl Chunk {
    /// `bytes`, written by `w`.
    pub fn new(w: Writer, bytes: Vec<u8>) -> Chunk {
        Chunk {
            tid: w.tid,
            pid: w.pid,
            comm: w.comm,
            clock: w.clock,
            bytes,
        }
    }

    /// The thread's name.
    pub fn comm(&self) -> String {
        let end = self.comm.iter().position(|&c| c == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.comm[..end]).into_owned()
    }

    /// Its records, appended to `out`, their timestamps in `CLOCK_MONOTONIC` ns.
    pub fn records(&self, clock: &TscClock, out: &mut Vec<Record>) {
        let b = &self.bytes[..];
        let comm = self.comm();
        let mut at = 0usize;
        while at < b.len() {
            let Ok((rec, _)) = RecHeader::read_from_prefix(&b[at..]) else {
                break;
            };
            let len = rec.len as usize;
            if len < 8 || !len.is_multiple_of(8) || len > b.len() - at {
                // A corrupt ring (the target wrote over it): give the rest up.
                log::warn!("thread {}: bad record length {len}", self.tid);
                break;
            }
            if rec.kind != REC_PAD && len >= size_of::<RecHeader>() {
                out.push(Record {
                    kind: rec.kind,
                    func: rec.func,
                    ts: if self.clock == CLOCK_TSC {
                        clock.ns(rec.ts)
                    } else {
                        rec.ts
                    },
                    cpu: rec.cpu,
                    tid: self.tid,
                    pid: self.pid,
                    comm: comm.clone(),
                    payload: b[at + size_of::<RecHeader>()..at + len].to_vec(),
                });
            }
            at += len;
        }
    }
}

/// The records of `chunks`, appended to `out` in time order. Returns how many.
pub fn records_of(chunks: &[Chunk], clock: &TscClock, out: &mut Vec<Record>) -> usize {
    let start = out.len();
    for c in chunks {
        c.records(clock, out);
    }
    out[start..].sort_by_key(|r| r.ts);
    out.len() - start
}

impl Drop for Rings {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests;
