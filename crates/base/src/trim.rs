//! Gives the memory of evicted sessions back to the system.
//!
//! glibc's allocator keeps freed memory in its per-thread arenas; a gateway that held 10,000
//! sessions and evicted them would keep their pages resident for good. `malloc_trim` releases
//! every whole free page of every arena. Elsewhere this does nothing.

/// Releases the allocator's free pages to the system (Linux with glibc only).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `malloc_trim` only returns free pages to the kernel; it takes no pointer and may
    // be called from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
