// The `stdin` source: the lines of the process's standard input (`producer | seedance run
// ...`), NDJSON or raw, checked as `tail` checks a file's lines (sources/tail/line_splitter.h):
// a line that is not JSON, or longer than max_line, goes to `error` with its line number.
//
// When the input ends (its writer closed it: end of file) the last line is taken even without
// its newline and the source has ended (SourceOutput::InputEnded): once every source has,
// `seedance run` stops as on SIGTERM, delivering what it read (exit 0 when all of it was).
//
// A reader thread waits for input with poll(2) (100 ms at a time, so a stop is never held by a
// silent writer; the descriptor, shared with the shell, is not made non-blocking) and reads one
// chunk of at most 64 KiB, which the event loop cuts into lines and hands on; the next read
// waits until every line of it was taken. So a full pipeline holds the writer (its pipe fills
// up) and the source holds at most one chunk and one line.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sources {

SourceFactory StdinSourceFactory();

}  // namespace seedance::sources
