//! The records kept undecoded while a traced command runs: a queue in memory, and past a
//! bound, an unnamed file in the temporary directory (gone with its descriptor, whatever
//! way dcg ends). Each entry is kept as it came, after its `u32` length (native order).

use std::ffi::c_void;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ptr::NonNull;

use nix::sys::mman::{madvise, MmapAdvise};

/// Bytes kept in memory before the rest goes to the file, unless the engine is told
/// otherwise (about 800,000 BPF records, or 16,000 pages of function_graph's).
pub const IN_MEMORY: usize = 64 << 20;

/// Records in memory, and those moved out to the spool file, oldest first.
#[derive(Default, Debug)]
pub struct Kept {
    /// The newest entries (each after its length).
    pub queue: Vec<u8>,
    /// The older ones, once the queue passed its bound.
    file: Option<File>,
    /// Bytes in `file`.
    spooled: u64,
    /// Bytes ever moved to the file.
    spooled_in_all: u64,
}

impl Kept {
    /// Add `entry` after the others, in memory.
    pub fn push(&mut self, entry: &[u8]) {
        self.push_parts(&[entry]);
    }

    /// Add the entry made of `parts`, one after the other, after the others, in memory.
    pub fn push_parts(&mut self, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let len = u32::try_from(len).expect("an entry under 4 GiB");
        self.queue.extend_from_slice(&len.to_ne_bytes());
        for p in parts {
            self.queue.extend_from_slice(p);
        }
    }

    /// Make room in memory for `bytes` in all, before they come: reserved, not touched,
    /// in huge pages where the kernel has them ([`huge_buffer`]). Each page a growing
    /// queue touches first is a page fault, and while a kernel engine's programs are
    /// attached, every traced function on the fault's path runs them: on Debian 7.2 in
    /// qemu a 4 KiB fault cost dcg about 70 us, and the records of 1000 `--deref` calls
    /// (24 MB) took about 1000 faults, on the CPU the traced command waits for.
    pub fn reserve(&mut self, bytes: usize) {
        if self.queue.capacity() >= bytes {
            return;
        }
        let mut queue = huge_buffer(bytes);
        queue.extend_from_slice(&self.queue);
        self.queue = queue;
    }

    /// [`Kept::reserve`] `bytes`, and have the kernel back them now, up to [`IN_MEMORY`]
    /// (`MADV_POPULATE_WRITE`; cleared pages, nothing written; a larger bound grows into
    /// the rest as it is used). For a caller that will keep records while a traced
    /// command runs: the kernel clears each page a queue touches first, and done then,
    /// that clearing competes with the command for the CPU. On Debian 7.2 in qemu it was
    /// about 1 ns a byte, 24 us of each `--deref` call's 200. Only a hint: where the
    /// kernel cannot, the pages come as they are touched.
    pub fn prefault(&mut self, bytes: usize) {
        self.reserve(bytes);
        let spare = self.queue.spare_capacity_mut();
        let at = spare.as_mut_ptr() as usize;
        let touched = bytes.min(IN_MEMORY).min(spare.len());
        let (start, end) = (at.next_multiple_of(4096), (at + touched) & !4095);
        if let Some(ptr) = NonNull::new(start as *mut c_void).filter(|_| end > start) {
            // SAFETY: the range lies within this vector's spare capacity (memory it owns,
            // holding nothing) and is page-aligned; MADV_POPULATE_WRITE only faults its
            // pages in, as zeroes, and never changes the mapping.
            let _ = unsafe { madvise(ptr, end - start, MmapAdvise::MADV_POPULATE_WRITE) };
        }
    }

    /// Bytes kept, in memory and in the spool file.
    pub fn len(&self) -> u64 {
        self.queue.len() as u64 + self.spooled
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes ever moved to the spool file.
    pub fn spooled_in_all(&self) -> u64 {
        self.spooled_in_all
    }

    /// Bytes kept in memory.
    pub fn in_memory(&self) -> usize {
        self.queue.len()
    }

    /// Move the queue to the spool file (made on first use).
    pub fn spool(&mut self) -> io::Result<()> {
        if self.queue.is_empty() {
            return Ok(());
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(tempfile::tempfile()?),
        };
        file.write_all(&self.queue)?;
        self.spooled += self.queue.len() as u64;
        self.spooled_in_all += self.queue.len() as u64;
        self.queue.clear();
        Ok(())
    }

    /// Hand every spooled entry to `f`, oldest first, reading the file `chunk` bytes at
    /// a time, then empty it (the queue in memory is the caller's, after these).
    pub fn take_spooled(&mut self, chunk: usize, mut f: impl FnMut(&[u8])) -> io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        if self.spooled == 0 {
            return Ok(());
        }
        file.seek(SeekFrom::Start(0))?;
        let mut reader = file.take(self.spooled);
        let mut buf: Vec<u8> = Vec::with_capacity(chunk);
        loop {
            // Keep what a partial entry left at the end, read the next chunk after it.
            let at = buf.len();
            buf.resize(at + chunk, 0);
            let got = read_full(&mut reader, &mut buf[at..])?;
            buf.truncate(at + got);
            let used = entries(&buf, &mut f);
            buf.drain(..used);
            if got == 0 {
                break;
            }
        }
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        self.spooled = 0;
        Ok(())
    }
}

/// An empty vector with room for at least `n` bytes, untouched, whose whole 2 MiB units
/// the kernel is asked to back with huge pages (one page fault each instead of 512; only
/// a hint: without transparent huge pages nothing changes). Where that much cannot be
/// had, an empty vector that grows as it is filled.
pub fn huge_buffer(n: usize) -> Vec<u8> {
    const HUGE: usize = 2 << 20;
    let mut v: Vec<u8> = Vec::new();
    // At least one whole unit, wherever the allocation starts.
    if v.try_reserve_exact(n.max(2 * HUGE).saturating_add(HUGE))
        .is_err()
    {
        return v;
    }
    let at = v.as_mut_ptr() as usize;
    let (start, end) = (at.next_multiple_of(HUGE), (at + v.capacity()) & !(HUGE - 1));
    if let Some(ptr) = NonNull::new(start as *mut c_void).filter(|_| end > start) {
        // SAFETY: the range lies within this vector's capacity (memory it owns and has
        // not touched) and is page-aligned; MADV_HUGEPAGE changes only how the kernel
        // backs it, never its contents or its mapping.
        let _ = unsafe { madvise(ptr, end - start, MmapAdvise::MADV_HUGEPAGE) };
    }
    v
}

/// Read until `buf` is full or the end.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Hand each whole entry at the start of `buf` to `f`; the bytes used.
pub fn entries(buf: &[u8], mut f: impl FnMut(&[u8])) -> usize {
    let mut rest = buf;
    while let Some((len, tail)) = rest.split_first_chunk::<4>() {
        let len = u32::from_ne_bytes(*len) as usize;
        let Some((entry, next)) = tail.split_at_checked(len) else {
            break;
        };
        f(entry);
        rest = next;
    }
    buf.len() - rest.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(q: &mut Vec<u8>, data: &[u8]) {
        q.extend_from_slice(&(data.len() as u32).to_ne_bytes());
        q.extend_from_slice(data);
    }

    #[test]
    fn spooled_entries_come_back_in_order_across_chunks() {
        let mut k = Kept::default();
        let mut want = Vec::new();
        for i in 0..50u8 {
            let data = vec![i; 1 + usize::from(i) * 7];
            entry(&mut k.queue, &data);
            want.push(data);
            if i % 10 == 9 {
                k.spool().unwrap();
            }
        }
        assert_eq!(k.in_memory(), 0);
        assert!(!k.is_empty());
        let mut got = Vec::new();
        // A chunk smaller than most entries: each is carried over chunk ends.
        k.take_spooled(64, |e| got.push(e.to_vec())).unwrap();
        assert_eq!(got, want);
        assert_eq!(k.len(), 0);
        // The file is reused, empty.
        entry(&mut k.queue, b"again");
        k.spool().unwrap();
        let mut again = Vec::new();
        k.take_spooled(4096, |e| again.push(e.to_vec())).unwrap();
        assert_eq!(again, vec![b"again".to_vec()]);
    }

    #[test]
    fn an_entry_pushed_in_parts_comes_back_whole() {
        let mut k = Kept::default();
        k.push_parts(&[b"who", b"", b"what"]);
        k.push(b"next");
        let mut got = Vec::new();
        entries(&k.queue, |e| got.push(e.to_vec()));
        assert_eq!(got, [b"whowhat".to_vec(), b"next".to_vec()]);
    }

    #[test]
    fn room_reserved_is_used_without_moving_the_queue() {
        let mut k = Kept::default();
        k.reserve(8 << 20);
        assert!(k.queue.capacity() >= 8 << 20);
        let at = k.queue.as_ptr();
        let data = vec![7u8; 4096];
        for _ in 0..1000 {
            k.push(&data);
        }
        assert_eq!(k.queue.as_ptr(), at, "the queue grew within its room");
        // A second, smaller reservation changes nothing.
        k.reserve(1 << 20);
        assert_eq!(k.queue.as_ptr(), at);
        let mut n = 0;
        assert_eq!(
            entries(&k.queue, |e| n += usize::from(e == &data[..])),
            k.queue.len()
        );
        assert_eq!(n, 1000);
    }

    /// This thread's minor page faults so far.
    fn faults() -> i64 {
        use nix::sys::resource::{getrusage, UsageWho};
        getrusage(UsageWho::RUSAGE_THREAD)
            .unwrap()
            .minor_page_faults()
    }

    #[test]
    fn prefaulted_room_is_filled_without_a_fault() {
        let data = vec![7u8; 4092];
        let mut k = Kept::default();
        k.reserve(16 << 20);
        k.prefault(8 << 20);
        let before = faults();
        for _ in 0..2000 {
            k.push(&data);
        }
        assert_eq!(faults() - before, 0, "8 MB into prefaulted room");
        // The rest of the room was reserved, not touched: filling it faults, once a page
        // or once a huge page (the last one prefaulted may reach 2 MiB into it).
        for _ in 0..2000 {
            k.push(&data);
        }
        let f = faults() - before;
        assert!(f >= 3, "{f} faults filling 8 MB not prefaulted");
        let mut n = 0;
        entries(&k.queue, |e| n += usize::from(e == &data[..]));
        assert_eq!(n, 4000);
    }

    #[test]
    fn room_that_cannot_be_had_is_not_reserved() {
        let mut k = Kept::default();
        k.reserve(usize::MAX / 2);
        assert_eq!(k.queue.capacity(), 0);
        k.push(b"still kept");
        assert_eq!(k.in_memory(), 4 + 10);
    }

    #[test]
    fn a_cut_entry_is_not_handed_out() {
        let mut q = Vec::new();
        entry(&mut q, b"whole");
        entry(&mut q, b"cut short");
        let mut n = 0;
        let used = entries(&q[..q.len() - 3], |_| n += 1);
        assert_eq!((n, used), (1, 9));
    }
}
