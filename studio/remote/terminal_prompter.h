// TerminalPrompter: the SSH questions (app/remote/prompter.h) asked on the
// controlling terminal (/dev/tty, so stdout can stay a pipe); passphrases with echo
// off (a signal that ends or stops the process puts echo back first: NOTE [Echo
// and signals] in the .cpp). Without a terminal, or in batch mode, nothing is
// accepted: unknown host keys (and hosts known with another key type) are
// rejected and passphrases declined, each with a line on stderr saying why.
// Config warnings go to stderr.
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
  bool asksAbout(app::remote::HostKeyQuestion::Kind) const override { return true; }
  void warning(const std::string& text) override;
  std::optional<app::remote::Secret> passphrase(const std::string& keyFile, int attempt) override;

 private:
  bool batch_;
  std::ostream& err_;
};

}  // namespace fs::studio::remote
