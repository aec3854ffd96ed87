// `seedance top`: scrapes a running pipeline's /metrics every interval and draws top/view.h's
// screen. On a terminal: the alternate screen, redrawn in place, q or Ctrl-C to quit (the
// terminal is given back as it was). Otherwise, or with --once, plain text.
//
// Plain ANSI, not a terminal library: Debian's ncurses links statically but then needs the
// terminfo database at run time, which minimal gateway images lack; the screen needs four
// VT100 sequences every terminal emulator understands.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <thread>

#include "http/fetch.h"
#include "main/commands.h"
#include "observe/prometheus_text.h"
#include "top/view.h"
#include "util/units.h"

namespace seedance::cli {
namespace {

using Clock = std::chrono::steady_clock;

Result<top::Snapshot> Scrape(const std::string& url, std::chrono::milliseconds timeout) {
  SEEDANCE_ASSIGN_OR_RETURN(http::FetchReply reply,
                            http::Fetch("GET", url, "", "text/plain", timeout));
  if (reply.status != 200) {
    return Status(StatusCode::kUnavailable, fmt::format("GET {}: HTTP {}", url, reply.status));
  }
  auto samples = observe::ParsePrometheusText(reply.body);
  if (!samples) return Status(StatusCode::kInvalidArgument, url + ": " + samples.error().message());
  return top::ReadSnapshot(*samples);
}

std::string Title(const std::string& url, const top::Snapshot& s, const std::string& interval,
                  bool terminal) {
  const std::time_t now = std::time(nullptr);
  return fmt::format("seedance top  {}  version {}  every {}  {:%H:%M:%S}{}", url,
                     s.version.empty() ? "?" : s.version, interval, fmt::localtime(now),
                     terminal ? "  (q quits)" : "");
}

// The terminal's state while top draws on it, given back by the destructor.
class Screen {
 public:
  Screen() {
    raw_input_ = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_) == 0;
    if (raw_input_) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // keys one by one, unechoed
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    Write("\x1b[?1049h\x1b[?25l");  // the alternate screen, the cursor hidden
  }
  ~Screen() {
    Write("\x1b[?25h\x1b[?1049l");
    if (raw_input_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  static void Size(size_t* width, size_t* height) {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
      *width = ws.ws_col;
      *height = ws.ws_row;
    } else {
      *width = 120;
      *height = 40;
    }
  }
  void Draw(const std::vector<std::string>& lines, size_t height) {
    std::string frame = "\x1b[H";
    for (size_t i = 0; i < lines.size() && i < height; ++i) {
      frame += lines[i];
      frame += i + 1 < height ? "\x1b[K\r\n" : "\x1b[K";
    }
    frame += "\x1b[J";
    Write(frame);
  }
  bool raw_input() const { return raw_input_; }

 private:
  static void Write(std::string_view text) {
    while (!text.empty()) {
      const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
      if (n <= 0) return;
      text.remove_prefix(static_cast<size_t>(n));
    }
  }
  termios saved_{};
  bool raw_input_ = false;
};

int Plain(const std::string& url, const TopOptions& o, std::chrono::milliseconds interval) {
  auto before = Scrape(url, std::max(interval, std::chrono::milliseconds(2000)));
  if (!before) {
    std::cerr << fmt::format("cannot read {}: {}\n", url, before.error().message());
    return kExitRuntime;
  }
  auto taken = Clock::now();
  while (true) {
    std::this_thread::sleep_for(interval);
    auto now = Scrape(url, std::max(interval, std::chrono::milliseconds(2000)));
    if (!now) {
      std::cerr << fmt::format("cannot read {}: {}\n", url, now.error().message());
      return kExitRuntime;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - taken).count();
    taken = Clock::now();
    for (const auto& line :
         top::RenderScreen(*now, &*before, seconds, Title(url, *now, o.interval, false))) {
      std::cout << line << "\n";
    }
    std::cout.flush();
    if (o.once) return kExitOk;
    std::cout << "\n";
    before = std::move(now);
  }
}

int Live(const std::string& url, const TopOptions& o, std::chrono::milliseconds interval) {
  // SIGINT, SIGTERM and SIGWINCH are read from a descriptor, next to the keys: the terminal
  // is restored on every way out.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGWINCH);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC);
  Screen screen;
  std::optional<top::Snapshot> before, now;
  double seconds = 0;
  std::string problem;
  auto taken = Clock::now();
  auto next_scrape = Clock::now();
  while (true) {
    if (Clock::now() >= next_scrape) {
      auto scraped = Scrape(url, std::max(interval, std::chrono::milliseconds(2000)));
      const auto at = Clock::now();
      if (scraped) {
        before = std::move(now);
        now = std::move(*scraped);
        seconds = std::chrono::duration<double>(at - taken).count();
        taken = at;
        problem.clear();
      } else {
        problem = fmt::format("cannot read {}: {} (trying again)", url, scraped.error().message());
      }
      next_scrape = at + interval;
    }
    size_t width = 0, height = 0;
    Screen::Size(&width, &height);
    std::vector<std::string> lines;
    if (now) {
      lines = top::RenderScreen(*now, before ? &*before : nullptr, seconds,
                                Title(url, *now, o.interval, true), width);
    } else {
      lines.push_back(Title(url, {}, o.interval, true));
    }
    if (!problem.empty()) lines.insert(lines.begin() + 1, problem.substr(0, width));
    screen.Draw(lines, height);
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_scrape - Clock::now());
    pollfd fds[2] = {{.fd = signal_fd, .events = POLLIN, .revents = 0},
                     {.fd = STDIN_FILENO, .events = POLLIN, .revents = 0}};
    const int n = poll(fds, screen.raw_input() ? 2 : 1, std::max<int>(0, wait.count()));
    if (n <= 0) continue;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      if (read(signal_fd, &info, sizeof info) == sizeof info && info.ssi_signo != SIGWINCH) break;
    }
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      char keys[64];
      const ssize_t got = read(STDIN_FILENO, keys, sizeof keys);
      if (got <= 0 && (fds[1].revents & POLLHUP)) break;  // the terminal went away
      bool quit = false;
      for (ssize_t i = 0; i < got; ++i) quit |= keys[i] == 'q' || keys[i] == 'Q' || keys[i] == 3;
      if (quit) break;
    }
  }
  if (signal_fd >= 0) close(signal_fd);
  return kExitOk;
}

}  // namespace

int Top(const TopOptions& o) {
  auto interval = util::ParseDuration(o.interval);
  if (!interval || *interval < std::chrono::milliseconds(100)) {
    std::cerr << "--interval: expected a duration of at least 100ms, e.g. 1s\n";
    return kExitConfig;
  }
  std::string url = o.url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.size() < 8 || url.compare(url.size() - 8, 8, "/metrics") != 0) url += "/metrics";
  const auto period = std::chrono::duration_cast<std::chrono::milliseconds>(*interval);
  if (o.once || !isatty(STDOUT_FILENO)) return Plain(url, o, period);
  return Live(url, o, period);
}

}  // namespace seedance::cli
