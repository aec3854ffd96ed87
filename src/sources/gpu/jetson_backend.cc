// The Jetson (Tegra) backend: NVML does not support the integrated GPU of Jetson modules, so
// its state is read from sysfs, as tegrastats and jetson_stats do:
//   - the GPU's devfreq device (sys/class/devfreq/<addr>.gpu, .gv11b, .ga10b, ...): cur_freq
//     in Hz, and device/load in tenths of a percent;
//   - memory from proc/meminfo: the GPU shares the module's RAM (MemTotal, MemAvailable);
//   - temperature from the thermal zone whose type names the GPU (GPU-therm, gpu-thermal);
//   - power from the INA3221 monitor's channel whose label names the GPU (VDD_GPU_SOC,
//     VDD_GPU), volts x amps; energy integrated from it over time.
// Every path is under `sysfs_root` ("/" on a module; a fixture directory in tests).
#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <set>

#include "sources/gpu/gpu_backend.h"
#include "util/fd_io.h"

namespace seedance::sources::gpu {
namespace {

// Paths are plain strings joined with '/': std::filesystem and iostreams would add their code
// to the binary for a handful of short reads.
std::string Join(const std::string& dir, std::string_view name) {
  std::string out = dir;
  if (!out.empty() && out.back() != '/') out += '/';
  out += name;
  return out;
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The file's text, trailing whitespace and NULs cut; nullopt when it cannot be read (a sysfs
// value is a few bytes, meminfo a few KiB: past 64 KiB a file is refused).
std::optional<std::string> ReadText(const std::string& path) {
  Result<std::string> read = util::ReadRegularFile(path, 64 * 1024, "sysfs file");
  if (!read.has_value()) return std::nullopt;
  std::string text = std::move(read).value();
  while (!text.empty() &&
         (std::isspace(static_cast<unsigned char>(text.back())) || text.back() == '\0')) {
    text.pop_back();
  }
  return text;
}

std::optional<double> ReadNumber(const std::string& path) {
  std::optional<std::string> text = ReadText(path);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The entries of `dir` as paths, sorted (a fixed order on every machine); none when it is
// missing. At most 4096.
std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    out.push_back(Join(dir, name));
    if (out.size() >= 4096) break;
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool IsGpuDevfreq(const std::string& name) {
  static const char* kNames[] = {".gpu", "gv11b", "ga10b", "gp10b", "gm20b", "gk20a", "gb10b"};
  std::string lower = Lower(name);
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* n) {
    std::string_view needle(n);
    return needle.front() == '.'
               ? lower.size() >= needle.size() &&
                     lower.compare(lower.size() - needle.size(), needle.size(), needle) == 0
               : lower.find(needle) != std::string::npos;
  });
}

class JetsonBackend final : public GpuBackend {
 public:
  explicit JetsonBackend(BackendSettings settings) : settings_(std::move(settings)) {}

  std::string_view name() const override { return "jetson"; }

  Status Open() override {
    const std::string& root = settings_.sysfs_root;
    for (const std::string& dev : List(Join(root, "sys/class/devfreq"))) {
      if (IsGpuDevfreq(BaseName(dev))) {
        devfreq_ = dev;
        break;
      }
    }
    if (devfreq_.empty()) {
      return NotFoundError("no Jetson GPU: no GPU devfreq device under " +
                           Join(root, "sys/class/devfreq"));
    }
    if (!settings_.devices.empty() &&
        (settings_.devices.size() > 1 ||
         (settings_.devices[0] != "0" && settings_.devices[0] != Uuid()))) {
      return InvalidArgumentError(fmt::format(
          "devices: no GPU \"{}\" (a Jetson module has one: 0, {})", settings_.devices[0], Uuid()));
    }
    model_ = ReadText(Join(root, "proc/device-tree/model")).value_or("NVIDIA Jetson");
    while (!model_.empty() && model_.back() == '\0') model_.pop_back();
    for (const std::string& zone : List(Join(root, "sys/class/thermal"))) {
      std::string type = Lower(ReadText(Join(zone, "type")).value_or(""));
      if (type.find("gpu") != std::string::npos) {
        thermal_ = Join(zone, "temp");
        break;
      }
    }
    FindPowerChannel(root);
    return Status::Ok();
  }

  void Sample(int64_t now_ns, std::vector<GpuSample>* out) override {
    GpuSample& s = out->emplace_back();
    s.index = 0;
    s.uuid = Uuid();
    s.name = model_;
    s.backend = "jetson";
    s.time_ns = now_ns;
    ReadMemory(settings_.sysfs_root, s);
    if (auto load = Read("gpu_util_pct", Join(devfreq_, "device/load"))) {
      s.Add("gpu_util_pct", *load / 10.0);
    }
    if (auto hz = Read("sm_clock_mhz", Join(devfreq_, "cur_freq"))) {
      s.Add("sm_clock_mhz", std::round(*hz / 1e6), true);
    }
    if (!thermal_.empty()) {
      if (auto milli = Read("temperature_c", thermal_)) s.Add("temperature_c", *milli / 1000.0);
    }
    if (!power_voltage_.empty()) {
      auto mv = Read("power_w", power_voltage_);
      auto ma = Read("power_w", power_current_);
      if (mv && ma) {
        double watts = *mv * *ma / 1e6;
        if (last_power_ns_ != 0 && now_ns > last_power_ns_) {
          energy_j_ += watts * static_cast<double>(now_ns - last_power_ns_) / 1e9;
        }
        last_power_ns_ = now_ns;
        s.Add("power_w", watts);
        s.Add("energy_j", energy_j_);
      }
    }
  }

 private:
  std::string Uuid() const { return "jetson-" + BaseName(devfreq_); }

  // The value at `path`; a file that cannot be read is noticed once per field.
  std::optional<double> Read(std::string_view field, const std::string& path) {
    std::optional<double> v = ReadNumber(path);
    if (!v && missing_.insert(std::string(field)).second) {
      Note(fmt::format("device 0: {} not available: cannot read {}", field, path));
    }
    return v;
  }

  void ReadMemory(const std::string& root, GpuSample& s) {
    double total_kb = -1, available_kb = -1;
    std::optional<std::string> text =
        ReadText(Join(root, "proc/meminfo"));  // both in the first 4 KiB
    auto value_of = [&](std::string_view key) {
      size_t at = text ? text->find(key) : std::string::npos;
      if (at == std::string::npos || (at > 0 && (*text)[at - 1] != '\n')) return -1.0;
      return std::strtod(text->c_str() + at + key.size(), nullptr);
    };
    total_kb = value_of("MemTotal:");
    available_kb = value_of("MemAvailable:");
    if (total_kb < 0 || available_kb < 0) {
      if (missing_.insert("memory").second) {
        Note("device 0: memory not available: no MemTotal/MemAvailable in " +
             Join(root, "proc/meminfo"));
      }
      return;
    }
    double total = total_kb * 1024, free = available_kb * 1024, used = total - free;
    s.Add("memory_total_bytes", total, true);
    s.Add("memory_used_bytes", used, true);
    s.Add("memory_free_bytes", free, true);
    if (total > 0) s.Add("memory_used_pct", 100.0 * used / total);
  }

  // The INA3221 channel whose label names the GPU: in<N>_label, in<N>_input (mV),
  // curr<N>_input (mA) in the same hwmon directory.
  void FindPowerChannel(const std::string& root) {
    for (const std::string& dev : List(Join(root, "sys/bus/i2c/drivers/ina3221"))) {
      for (const std::string& hwmon : List(Join(dev, "hwmon"))) {
        for (const std::string& f : List(hwmon)) {
          std::string file = BaseName(f);
          if (file.rfind("in", 0) != 0 || file.size() < 8 ||
              file.compare(file.size() - 6, 6, "_label") != 0) {
            continue;
          }
          std::string label = Lower(ReadText(f).value_or(""));
          if (label.find("gpu") == std::string::npos) continue;
          std::string channel = file.substr(2, file.size() - 8);
          power_voltage_ = Join(hwmon, "in" + channel + "_input");
          power_current_ = Join(hwmon, "curr" + channel + "_input");
          return;
        }
      }
    }
    Note("device 0: power_w not available: no INA3221 channel labelled for the GPU");
  }

  BackendSettings settings_;
  std::string devfreq_, thermal_, power_voltage_, power_current_;
  std::string model_;
  std::set<std::string> missing_;
  double energy_j_ = 0;
  int64_t last_power_ns_ = 0;
};

}  // namespace

std::unique_ptr<GpuBackend> MakeJetsonBackend(const BackendSettings& settings) {
  return std::make_unique<JetsonBackend>(settings);
}

}  // namespace seedance::sources::gpu
