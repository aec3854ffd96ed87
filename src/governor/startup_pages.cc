#include "governor/startup_pages.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "governor/heap.h"

namespace seedance::governor {
namespace {

// True when a debugger (or any ptrace tracer) is attached: its breakpoints live in private
// copies of text pages, which releasing would drop.
bool Traced() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return true;  // cannot tell: leave everything as it is
  char line[128];
  bool traced = false;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "TracerPid:", 10) == 0) {
      traced = std::strtol(line + 10, nullptr, 10) != 0;
      break;
    }
  }
  std::fclose(f);
  return traced;
}

// An object with text relocations had its "read-only" segments written by the loader.
bool HasTextRelocations(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_DYNAMIC) continue;
    const auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + ph.p_vaddr);
    for (; dyn->d_tag != DT_NULL; ++dyn) {
      if (dyn->d_tag == DT_TEXTREL) return true;
      if (dyn->d_tag == DT_FLAGS && (dyn->d_un.d_val & DF_TEXTREL) != 0) return true;
    }
  }
  return false;
}

int ReleaseObject(dl_phdr_info* info, size_t, void* data) {
  auto* released = static_cast<int*>(data);
  // The vDSO is the kernel's, not a file mapping.
  if (info->dlpi_name != nullptr && std::strncmp(info->dlpi_name, "linux-vdso", 10) == 0) {
    return 0;
  }
  if (HasTextRelocations(info)) return 0;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) != 0 || ph.p_memsz == 0) continue;
    // Whole pages inside the segment only: a page it shares with a writable neighbour stays.
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    const uintptr_t begin = (start + page - 1) & ~(page - 1);
    const uintptr_t end = (start + ph.p_memsz) & ~(page - 1);
    if (end <= begin) continue;
    if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED) == 0) ++*released;
  }
  return 0;
}

}  // namespace

ReleasedPages ReleaseStartupPages() {
  ReleasedPages result;
  result.bytes_before = ResidentBytes();
  if (!Traced()) dl_iterate_phdr(ReleaseObject, &result.segments);
  result.bytes_after = ResidentBytes();
  return result;
}

}  // namespace seedance::governor
