// The code and read-only data that start-up touched, dropped from this process's mappings once
// it is ready.
//
// Loading the config, YAML, CLI parsing, building the plugins and the TLS library's set-up run
// once, but every page they touched stays mapped (on Linux a read fault maps up to 16 pages of
// the page cache around it), so most of an idle process's RSS was code it would not run again:
// about 4 MB of the 7.3-7.7 MB after the reference job started (bench/run startup). The pages are
// not freed: they stay in the page cache (shared with every other process mapping the same file,
// reclaimable at no cost while unmapped); what the process runs after this faults back in
// from there (a minor fault, no disk read while the page is cached).
//
// Only segments that no one can have written are released: the non-writable PT_LOAD segments
// of each loaded object (text, read-only data, unwind tables), not the RELRO part of the
// writable segment (its pages hold relocated pointers: private copies that would be lost), and
// no object with text relocations. Nothing is released while a debugger is attached (its
// breakpoints are private copies of text pages).
#pragma once

#include <cstdint>

namespace seedance::governor {

struct ReleasedPages {
  uint64_t bytes_before = 0;  // resident set size before, bytes
  uint64_t bytes_after = 0;   // and after
  int segments = 0;           // segments released
};

// Releases the start-up pages of every loaded object (the binary, libc, libm, the loader and
// any library loaded at run time). Call once the process is ready; calling it again later only
// drops what has faulted back in since.
ReleasedPages ReleaseStartupPages();

}  // namespace seedance::governor
