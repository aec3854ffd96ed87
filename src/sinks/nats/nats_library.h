// The NATS C client (Debian's libnats3.4), loaded when a `nats` sink is configured rather than
// linked: the binary stays free of shared libraries besides libc and libm, and of the client's
// size, for everyone who does not use NATS (a build option on top: SEEDANCE_SINK_NATS). The
// header is the build machine's <nats/nats.h>; the functions are looked up by name.
#pragma once

#include <nats/nats.h>

#include <string>

namespace seedance::sinks {

#define SEEDANCE_NATS_FUNCTIONS(X)           \
  X(natsOptions_Create)                      \
  X(natsOptions_Destroy)                     \
  X(natsOptions_SetServers)                  \
  X(natsOptions_SetUserInfo)                 \
  X(natsOptions_SetToken)                    \
  X(natsOptions_SetUserCredentialsFromFiles) \
  X(natsOptions_SetNKeyFromSeed)             \
  X(natsOptions_SetSecure)                   \
  X(natsOptions_LoadCATrustedCertificates)   \
  X(natsOptions_SkipServerVerification)      \
  X(natsOptions_SetName)                     \
  X(natsOptions_SetTimeout)                  \
  X(natsOptions_SetMaxReconnect)             \
  X(natsOptions_SetReconnectWait)            \
  X(natsOptions_SetRetryOnFailedConnect)     \
  X(natsOptions_SetDisconnectedCB)           \
  X(natsOptions_SetReconnectedCB)            \
  X(natsOptions_SetErrorHandler)             \
  X(natsOptions_SetClosedCB)                 \
  X(natsConnection_Connect)                  \
  X(natsConnection_Close)                    \
  X(natsConnection_Destroy)                  \
  X(natsConnection_GetConnectedUrl)          \
  X(natsConnection_GetLastError)             \
  X(natsConnection_Status)                   \
  X(nats_GetLastError)                       \
  X(natsConnection_JetStream)                \
  X(jsOptions_Init)                          \
  X(jsCtx_Destroy)                           \
  X(jsStreamConfig_Init)                     \
  X(js_AddStream)                            \
  X(js_GetStreamInfo)                        \
  X(jsStreamInfo_Destroy)                    \
  X(js_PublishMsgAsync)                      \
  X(js_PublishAsyncGetPendingList)           \
  X(natsMsgList_Destroy)                     \
  X(natsMsg_Create)                          \
  X(natsMsg_Destroy)                         \
  X(natsMsgHeader_Set)                       \
  X(natsStatus_GetText)

struct NatsLibrary {
#define SEEDANCE_NATS_MEMBER(name) decltype(&::name) name = nullptr;
  SEEDANCE_NATS_FUNCTIONS(SEEDANCE_NATS_MEMBER)
#undef SEEDANCE_NATS_MEMBER
};

// The library, loaded on first use (and kept: libnats has process-wide threads); nullptr with
// `why` (what to install) when it cannot be.
const NatsLibrary* LoadNatsLibrary(std::string* why);

}  // namespace seedance::sinks
