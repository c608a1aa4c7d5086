//! A global allocator that counts the bytes a test binary holds, and the most it held since a
//! mark: for tests that bound what one operation allocates. A binary opts in with
//! `#[global_allocator] static ALLOC: Counting = Counting::new();` (one per binary).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting.
pub struct Counting {
    held: AtomicUsize,
    peak: AtomicUsize,
}

impl Counting {
    /// A counter at zero.
    pub const fn new() -> Self {
        Counting {
            held: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Starts a measure: the peak from now on, counted from what is held now.
    pub fn mark(&self) -> usize {
        let held = self.held.load(Ordering::SeqCst);
        self.peak.store(held, Ordering::SeqCst);
        held
    }

    /// The most held at once since [`mark`](Counting::mark) returned `base`, above `base`.
    pub fn peak_above(&self, base: usize) -> usize {
        self.peak.load(Ordering::SeqCst).saturating_sub(base)
    }

    fn grew(&self, bytes: usize) {
        let held = self.held.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.peak.fetch_max(held, Ordering::SeqCst);
    }

    fn shrank(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::SeqCst);
    }
}

impl Default for Counting {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every call is passed to the system allocator as it is; only counters change.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let at = System.alloc(layout);
        if !at.is_null() {
            self.grew(layout.size());
        }
        at
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let at = System.alloc_zeroed(layout);
        if !at.is_null() {
            self.grew(layout.size());
        }
        at
    }

    unsafe fn dealloc(&self, at: *mut u8, layout: Layout) {
        System.dealloc(at, layout);
        self.shrank(layout.size());
    }

    unsafe fn realloc(&self, at: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = System.realloc(at, layout, new_size);
        if !moved.is_null() {
            // Counted as both held while the copy is made, as it may be.
            self.grew(new_size);
            self.shrank(layout.size());
        }
        moved
    }
}
