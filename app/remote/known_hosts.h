// Host keys in OpenSSH known_hosts files, looked up and written by our own
// code (not libssh's ssh_session_is_known_server, which reads the user's real
// files and cannot say which file and line matched).
//
// Understood: plain names and "[host]:port", comma lists with * ? and
// !negation, hashed names (|1|salt|hash, HMAC-SHA1), @revoked lines, comments.
// @cert-authority lines are skipped (no certificates here); malformed lines
// are skipped as ssh does.
//
// Thread-safety: free functions; appendKnownHost is not atomic against other
// writers of the same file (like ssh, it appends one line with one write).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::app::remote {

// One key a known_hosts file holds for a host.
struct StoredHostKey {
  std::string type;         // the key's type ("ecdsa-sha2-nistp256", ...)
  std::string fingerprint;  // "SHA256:..."
  std::string file;
  int line = 0;
};

struct KnownHostResult {
  // kOtherType: no key of the offered type is stored for the host, but keys
  // of other types are (NOTE [Host keys] in ssh_connection.h): not the same as
  // kUnknown, the host is known.
  enum class Kind { kKnown, kUnknown, kOtherType, kChanged, kRevoked };
  Kind kind = Kind::kUnknown;
  // kKnown, kChanged, kRevoked: where the (stored) entry is.
  std::string file;
  int line = 0;
  // kChanged: the stored key of the same type.
  std::string stored_key_type;
  std::string stored_fingerprint;
  // kOtherType: the keys stored for the host, in file order.
  std::vector<StoredHostKey> other_keys;
};

// The name a host has in known_hosts: "host" for port 22, else "[host]:port".
std::string knownHostsName(const std::string& host, int port);

// The type name inside an SSH public key blob ("ssh-ed25519", ...); "" when malformed.
std::string keyBlobType(std::string_view key_blob);

// Looks `host`:`port` with key `key_blob` (the raw public key blob) up in the
// files in order. kRevoked beats everything; then a matching key (kKnown);
// then a stored key of the same type that differs (kChanged, the first one);
// then keys of other types only (kOtherType, listing them); else kUnknown. A
// missing file counts as empty; an unreadable one is kIOError naming it.
protocol::StatusOr<KnownHostResult> checkKnownHost(const std::vector<std::string>& files,
                                                   const std::string& host, int port,
                                                   std::string_view key_blob);

// The keys stored for `host`:`port` (not @revoked or @cert-authority lines),
// in file order; errors as checkKnownHost.
protocol::StatusOr<std::vector<StoredHostKey>> storedHostKeys(const std::vector<std::string>& files,
                                                              const std::string& host, int port);

// The host-key algorithms a client offers (libssh's SSH_OPTIONS_HOSTKEYS),
// those that can verify a key of a stored type first, as OpenSSH orders them:
// a server with several host keys then shows the one we know. Every default
// algorithm stays on offer; without stored keys, the default order.
std::string hostKeyAlgorithmsPreferring(const std::vector<StoredHostKey>& stored);

// "SHA256:" + unpadded base64 of SHA-256(key_blob), as ssh-keygen -l prints.
std::string fingerprintSha256(std::string_view key_blob);

// Appends "NAME TYPE BASE64" to `file`, creating it (0600) and its directory
// (0700) when missing.
protocol::Status appendKnownHost(const std::string& file, const std::string& host, int port,
                                 std::string_view key_blob);

// Base64 without line breaks; decode returns false on malformed text.
std::string base64Encode(std::string_view bytes, bool pad = true);
bool base64Decode(std::string_view text, std::string* bytes);

}  // namespace fs::app::remote
