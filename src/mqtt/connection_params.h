// The configuration keys of an MQTT connection, shared by the MQTT source and the MQTT sink:
// `uri`, `protocol`, `client_id`, `username`, `password`, `persistent_session`,
// `session_expiry`, `keep_alive`, `connect_timeout`, `reconnect_min`, `reconnect_max`,
// `max_packet_size` and the `tls` section — declared once, read into ClientOptions once.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mqtt/client.h"
#include "seedance/options.h"
#include "seedance/param_spec.h"
#include "seedance/result.h"

namespace seedance::mqtt {

// The `tls` section.
struct TlsSettings {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  bool verify = true;
  std::string server_name;
};

// The keys above, as given (defaults applied).
struct ConnectionSettings {
  std::string uri;
  Version version = Version::kV5;
  std::optional<std::string> client_id;
  std::optional<std::string> username;
  std::optional<std::string> password;
  std::optional<bool> persistent_session;
  std::chrono::seconds session_expiry{3600};
  std::chrono::seconds keep_alive{30};
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds reconnect_min{200};
  std::chrono::milliseconds reconnect_max{30000};
  uint64_t max_packet_size = 16u << 20;
  TlsSettings tls;
};

// The keys, for a plugin's Options (Include them). `client_id_doc` says what the default
// client id is for this plugin.
Options<ConnectionSettings> ConnectionSchema(const std::string& client_id_doc);

// The client's options from the bound keys. `default_client_id` is used when `client_id` is
// not set; `qos` decides the default of `persistent_session` (true with QoS 1 or 2: a clean
// session would drop what the broker holds for us across a restart). Checks the TLS files;
// `p` gives their location in errors.
Result<ClientOptions> ToClientOptions(const ConnectionSettings& s, const Params& p,
                                      std::string default_client_id, int qos);

}  // namespace seedance::mqtt
