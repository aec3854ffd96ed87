#include "sinks/file/file_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "sinks/common/event_encoding.h"
#include "util/fd_io.h"
#include "util/log.h"

namespace seedance::sinks {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// What opening `path` for appending would refuse, checked when the config is read (by
// `validate` too): a directory, a parent that is missing or not a directory, a URL.
Status CheckAppendPath(const Params& p, const std::string& path) {
  const std::string where = p.Location("path") + ": path \"" + path + "\"";
  if (path.empty()) return InvalidArgumentError(where + " is empty");
  if (path.find("://") != std::string::npos) {
    return InvalidArgumentError(where +
                                " is a URL; the file sink takes a file path (the http "
                                "sink sends to a URL)");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return InvalidArgumentError(where + " is a directory; give the file to append to");
    }
    return Status::Ok();
  }
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : path.substr(0, slash);
  if (::stat(parent.c_str(), &st) != 0) {
    return InvalidArgumentError(where + ": its directory " + parent + " does not exist (" +
                                std::strerror(errno) + ")");
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(where + ": " + parent + " is not a directory");
  }
  return Status::Ok();
}

class FileSink final : public Sink {
 public:
  FileSink(std::string path, EventEncoding encoding, uint64_t max_size, int max_files, bool fsync,
           std::string name)
      : path_(std::move(path)),
        encoding_(encoding),
        max_size_(max_size),
        max_files_(max_files),
        fsync_(fsync),
        name_(std::move(name)) {}
  ~FileSink() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Start() override { return Open(); }

  // A failed write is retried by the runner (a full disk, an I/O error): the file is opened
  // again for the next attempt (it may have been replaced), and lines of the failed attempt
  // that did reach the file are written again (at least once).
  void Attempt(uint64_t /*id*/, const Batch& batch, AttemptCallback done) override {
    std::string pending;
    std::string line;
    for (const Event& e : batch.events) {
      line.clear();
      AppendEvent(e, encoding_, /*as_json_value=*/true, line);
      line.push_back('\n');
      // Rotate before a line that would take the file past max_size (a file holds at least
      // one line, however long).
      if (max_size_ > 0 && size_ + pending.size() > 0 &&
          size_ + pending.size() + line.size() > max_size_) {
        if (Status s = Write(pending); !s.ok()) return done(Failed(s));
        pending.clear();
        if (Status s = Rotate(); !s.ok()) SEEDANCE_LOG_ERROR(name_, "{}", s.message());
      }
      pending += line;
    }
    if (Status s = Write(pending); !s.ok()) return done(Failed(s));
    if (fsync_ && fd_ >= 0 && ::fdatasync(fd_) != 0) {
      return done(Failed(UnavailableError(Errno("fdatasync of " + path_))));
    }
    done(AttemptOutcome::Delivered());
  }

 private:
  AttemptOutcome Failed(const Status& s) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return AttemptOutcome::Retry(s.message());
  }

  Status Write(const std::string& bytes) {
    if (bytes.empty()) return Status::Ok();
    if (fd_ < 0) SEEDANCE_RETURN_IF_ERROR(Open());
    if (int err = util::WriteAll(fd_, bytes); err != 0) {
      errno = err;
      return UnavailableError(Errno("writing " + path_));
    }
    size_ += bytes.size();
    return Status::Ok();
  }

  Status Open() {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) return InvalidArgumentError(Errno("cannot open " + path_));
    struct stat st {};
    if (::fstat(fd_, &st) == 0) size_ = static_cast<uint64_t>(st.st_size);
    return Status::Ok();
  }

  Status Rotate() {
    ::close(fd_);
    fd_ = -1;
    for (int i = max_files_ - 1; i >= 1; --i) {
      std::string from = path_ + "." + std::to_string(i);
      std::string to = path_ + "." + std::to_string(i + 1);
      std::rename(from.c_str(), to.c_str());  // a missing one is fine
    }
    if (max_files_ >= 1 && std::rename(path_.c_str(), (path_ + ".1").c_str()) != 0) {
      return InternalError(Errno("rotating " + path_));
    }
    size_ = 0;
    return Open();
  }

  std::string path_;
  EventEncoding encoding_;
  uint64_t max_size_;
  int max_files_;
  bool fsync_;
  std::string name_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace

namespace {

struct FileSinkSettings {
  std::string path;
  EventEncoding encoding = EventEncoding::kEnvelope;
  uint64_t max_size = 0;
  int max_files = 5;
  bool fsync = false;
};

const Options<FileSinkSettings>& FileSinkSchema() {
  using S = FileSinkSettings;
  static const Options<S> o =
      Options<S>()
          .Add(&S::path, {.name = "path", .doc = "file to append to", .required = true})
          .Enum(&S::encoding,
                {.name = "encoding",
                 .doc = "payload alone, or an envelope with id, topic, time, payload and headers",
                 .default_value = "envelope"},
                EventEncodingChoices())
          .Size(&S::max_size, {.name = "max_size",
                               .doc = "rotate beyond this size (0 = never)",
                               .default_value = "0"})
          .Int(&S::max_files,
               {.name = "max_files", .doc = "rotated files kept", .default_value = "5"})
          .Add(&S::fsync,
               {.name = "fsync", .doc = "fsync after each batch", .default_value = "false"});
  return o;
}

}  // namespace

SinkFactory FileSinkFactory() {
  SinkFactory f;
  f.info.type = "file";
  f.info.kind = PluginKind::kSink;
  f.info.summary = "Appends events to a file as NDJSON, rotating by size.";
  f.delivery = {};  // one write at a time; batch_size and retries
  f.info.params = FileSinkSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(FileSinkSettings s, FileSinkSchema().Bind(p));
    SEEDANCE_RETURN_IF_ERROR(CheckAppendPath(p, s.path));
    return std::unique_ptr<Sink>(
        new FileSink(s.path, s.encoding, s.max_size, s.max_files, s.fsync, ctx.name));
  };
  return f;
}

}  // namespace seedance::sinks
