//! The ring file: created by dcg in `/dev/shm`, mapped shared by every traced process,
//! drained here. See [`crate::layout`] for the bytes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::MmapMut;
use zerocopy::FromBytes;

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
    /// Index of the ring (its thread's name is [`Rings::comm`]).
    pub ring: u32,
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
    /// A string that could not be read.
    Fault,
}

/// Decode a record's payload by the kinds of its fetch ops (`true`: a string).
pub fn values(payload: &[u8], strings: impl Iterator<Item = bool>) -> Option<Vec<RawValue>> {
    let mut at = 0usize;
    let mut out = Vec::new();
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_ne_bytes(
            payload.get(at..at + 8)?.try_into().ok()?,
        ))
    };
    for is_string in strings {
        let w = word(at)?;
        at += 8;
        if !is_string {
            out.push(RawValue::Word(w));
        } else if w == STRING_FAULT {
            out.push(RawValue::Fault);
        } else {
            let n = usize::try_from(w).ok()?;
            out.push(RawValue::Str(payload.get(at..at.checked_add(n)?)?.to_vec()));
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

    /// The name of ring `i`'s thread when it claimed the ring.
    pub fn comm(&self, i: u32) -> String {
        let off = ring_offset(i, self.ring_size) + std::mem::offset_of!(RingHeader, comm);
        let b = &self.map[off..off + 16];
        let end = b.iter().position(|&c| c == 0).unwrap_or(16);
        String::from_utf8_lossy(&b[..end]).into_owned()
    }

    /// Take every complete record from every ring, appending them to `out` in time order
    /// (each ring is in order; rings are merged by timestamp). Returns how many.
    pub fn drain(&mut self, out: &mut Vec<Record>) -> usize {
        let start = out.len();
        for i in 0..self.claimed() {
            let base = ring_offset(i, self.ring_size);
            let hdr = size_of::<RingHeader>();
            if self
                .u32_at(base + std::mem::offset_of!(RingHeader, ready))
                .load(Ordering::Acquire)
                == 0
            {
                continue;
            }
            let (tid, pid) = {
                let r = RingHeader::ref_from_prefix(&self.map[base..])
                    .expect("in bounds")
                    .0;
                (r.tid, r.pid)
            };
            let head = self
                .u64_at(base + std::mem::offset_of!(RingHeader, head))
                .load(Ordering::Acquire);
            let tail_at = self.u64_at(base + std::mem::offset_of!(RingHeader, tail));
            let mut tail = tail_at.load(Ordering::Relaxed);
            let size = u64::from(self.ring_size);
            let data = base + hdr;
            while tail < head {
                let at = data + (tail % size) as usize;
                let Ok((rec, _)) = RecHeader::read_from_prefix(&self.map[at..]) else {
                    break;
                };
                let len = u64::from(rec.len);
                if len < 8 || len % 8 != 0 || len > head - tail {
                    // A corrupt ring (the target wrote over it): give it up.
                    log::warn!("ring {i}: bad record length {len}");
                    tail = head;
                    break;
                }
                if rec.kind != REC_PAD && len >= size_of::<RecHeader>() as u64 {
                    let body = at + size_of::<RecHeader>();
                    out.push(Record {
                        kind: rec.kind,
                        func: rec.func,
                        ts: rec.ts,
                        cpu: rec.cpu,
                        tid,
                        pid,
                        ring: i,
                        payload: self.map[body..at + len as usize].to_vec(),
                    });
                }
                tail += len;
            }
            tail_at.store(tail, Ordering::Release);
        }
        out[start..].sort_by_key(|r| r.ts);
        out.len() - start
    }
}

impl Drop for Rings {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_values() {
        let mut p = Vec::new();
        p.extend_from_slice(&7u64.to_ne_bytes());
        p.extend_from_slice(&3u64.to_ne_bytes());
        p.extend_from_slice(b"abc\0\0\0\0\0");
        p.extend_from_slice(&STRING_FAULT.to_ne_bytes());
        let v = values(&p, [false, true, true].into_iter()).unwrap();
        assert_eq!(
            v,
            vec![
                RawValue::Word(7),
                RawValue::Str(b"abc".to_vec()),
                RawValue::Fault
            ]
        );
        assert!(values(&p[..12], [false, true].into_iter()).is_none());
    }
}
