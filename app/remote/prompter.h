// Prompter: the questions connecting over SSH may have to ask a person — is
// this unknown host key the right one, and what is the passphrase of a key
// file. The GUI implements it with dialogs, the CLI on a terminal, tests with
// fixed answers. Secret: a passphrase in memory only, zeroed when destroyed.
//
// Thread-safety: an SshConnection calls its Prompter from the thread that
// called connect() (or the call that reconnects), one question at a time; an
// implementation that shows dialogs must hop to the GUI thread itself and
// block the caller until answered.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/remote/known_hosts.h"

namespace fs::app::remote {

// A string that is wiped (OPENSSL_cleanse) when destroyed or cleared. Never
// logged, never written to disk.
class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  Secret(Secret&& other) noexcept : value_(std::move(other.value_)) { other.clear(); }
  Secret& operator=(Secret&& other) noexcept;
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  ~Secret() { clear(); }

  const char* c_str() const { return value_.c_str(); }
  bool empty() const { return value_.empty(); }
  void clear();

 private:
  std::string value_;
};

struct HostKeyQuestion {
  // kUnknown: no key of the host is stored. kOtherType: keys of other types
  // are stored for it, and the server offers none of them (NOTE [Host keys]
  // in ssh_connection.h). A changed key is refused, never asked about.
  enum class Kind { kUnknown, kOtherType };
  std::string host;  // the HostName connected to (through a jump host: as the jump host sees it)
  int port = 22;
  std::string alias;               // the destination as written, for the dialog's title
  std::string key_type;            // "ssh-ed25519", ...
  std::string fingerprint_sha256;  // "SHA256:...", as ssh-keygen -l prints
  std::string save_file;           // where kAcceptAndSave writes (the first UserKnownHostsFile)
  Kind kind = Kind::kUnknown;
  // kOtherType: the keys known_hosts holds for the host, with their file:line.
  std::vector<StoredHostKey> known_keys;
};

// The question as a person reads it (the terminal prints it; a dialog may use
// it): for kOtherType it says that the host is known with keys of other types
// and names them with their file:line, as OpenSSH does.
std::string hostKeyQuestionText(const HostKeyQuestion& question);

enum class HostKeyAnswer { kReject, kAcceptOnce, kAcceptAndSave };

class Prompter {
 public:
  virtual ~Prompter() = default;
  virtual HostKeyAnswer hostKey(const HostKeyQuestion& question) = 0;
  // Whether hostKey() shows questions of this kind as such. A prompter that
  // only knows kUnknown (the default) is never asked about a host known with
  // another key type: that connection is refused with the stored keys named,
  // so that nobody is shown "unknown host" for a known one.
  virtual bool asksAbout(HostKeyQuestion::Kind kind) const { return kind == HostKeyQuestion::Kind::kUnknown; }
  // A warning about the connection's configuration ("file:line: ..."), given
  // once per connection; the default drops it (HostSpec::warnings holds them too).
  virtual void warning(const std::string& text) { (void)text; }
  // The passphrase of an encrypted private key; nullopt: the person declined
  // (the key is skipped). `attempt` counts from 1; a wrong answer asks again
  // up to three times.
  virtual std::optional<Secret> passphrase(const std::string& key_file, int attempt) = 0;
};

}  // namespace fs::app::remote
