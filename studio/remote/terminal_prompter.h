// TerminalPrompter: the SSH questions (app/remote/prompter.h) asked on the
// controlling terminal (/dev/tty, so stdout can stay a pipe); passphrases with echo
// off. Without a terminal, or in batch mode, nothing is accepted: unknown host keys
// are rejected and passphrases declined, each with a line on stderr saying why.
//
// Thread-safety: one question at a time (SshConnection's guarantee).
#pragma once

#include <ostream>

#include "app/remote/prompter.h"

namespace fs::studio::remote {

class TerminalPrompter : public app::remote::Prompter {
 public:
  TerminalPrompter(bool batch, std::ostream& err) : batch_(batch), err_(err) {}
  app::remote::HostKeyAnswer hostKey(const app::remote::HostKeyQuestion& q) override;
  std::optional<app::remote::Secret> passphrase(const std::string& keyFile, int attempt) override;

 private:
  bool batch_;
  std::ostream& err_;
};

}  // namespace fs::studio::remote
