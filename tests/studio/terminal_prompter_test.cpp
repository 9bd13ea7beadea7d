// TerminalPrompter on a real pseudo-terminal: Ctrl-C during the passphrase
// question leaves the terminal with echo on (issue 42, Low), whether the
// process dies of it or handles SIGINT itself; a host known with another key
// type is shown as such (issue 42 item 3).
#include "studio/remote/terminal_prompter.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/fixtures/fixture_unavailable.h"

namespace fs::studio::remote {
namespace {

volatile sig_atomic_t g_caught = 0;
void onSigint(int) {
  g_caught = 1;
}

// A pty whose slave is the controlling terminal of a forked child.
class PtyChild {
 public:
  bool open() {
    master_ = posix_openpt(O_RDWR | O_NOCTTY);
    if (master_ < 0 || grantpt(master_) != 0 || unlockpt(master_) != 0) return false;
    slave_name_ = ptsname(master_);
    slave_ = ::open(slave_name_.c_str(), O_RDWR | O_NOCTTY);
    return slave_ >= 0;
  }
  ~PtyChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (slave_ >= 0) close(slave_);
    if (master_ >= 0) close(master_);
  }

  // Runs `body` in a child whose controlling terminal is the pty; its exit code is body's.
  template <typename Body>
  void start(Body body) {
    pid_ = fork();
    if (pid_ == 0) {
      close(master_);
      close(slave_);
      setsid();
      const int tty = ::open(slave_name_.c_str(), O_RDWR);  // becomes the controlling terminal
      if (tty < 0 || ioctl(tty, TIOCSCTTY, 0) != 0) _exit(90);
      _exit(body());
    }
  }

  // Reads the master until `text` appeared (or 10 s passed).
  bool waitForOutput(const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (output_.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        char buf[256];
        const ssize_t n = read(master_, buf, sizeof buf);
        if (n > 0) output_.append(buf, static_cast<std::size_t>(n));
      }
    }
    return output_.find(text) != std::string::npos;
  }

  bool echo() const {
    termios t{};
    return tcgetattr(slave_, &t) == 0 && (t.c_lflag & ECHO) != 0;
  }
  // Waits until echo is `on` (the child switches it right after the prompt).
  bool waitForEcho(bool on) const {
    for (int i = 0; i < 500; ++i) {
      if (echo() == on) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void type(const std::string& keys) const { (void)!write(master_, keys.data(), keys.size()); }
  // The child's wait status; -1 when it had not ended after 10 s (then it is killed).
  int wait() {
    int status = 0;
    for (int i = 0; i < 1000; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

 private:
  int master_ = -1, slave_ = -1;
  std::string slave_name_, output_;
  pid_t pid_ = -1;
};

int askPassphrase() {
  TerminalPrompter prompter(false, std::cerr);
  auto secret = prompter.passphrase("/keys/id_test", 1);
  return secret ? 0 : 3;
}

TEST(TerminalPrompterTest, CtrlCDuringThePassphraseLeavesEchoOn) {
  PtyChild pty;
  if (!pty.open()) FS_FIXTURE_UNAVAILABLE("no pseudo-terminal (posix_openpt)");
  ASSERT_TRUE(pty.echo());
  pty.start([] {
    signal(SIGINT, SIG_DFL);
    return askPassphrase();
  });
  ASSERT_TRUE(pty.waitForOutput("Passphrase for /keys/id_test: "));
  ASSERT_TRUE(pty.waitForEcho(false));
  pty.type("half-typed\x03");  // VINTR: SIGINT to the foreground process group
  const int status = pty.wait();
  ASSERT_NE(status, -1) << "still reading the passphrase after Ctrl-C";
  ASSERT_TRUE(WIFSIGNALED(status)) << status;  // it still dies of Ctrl-C
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_TRUE(pty.echo());
}

TEST(TerminalPrompterTest, CtrlCInAProcessThatHandlesSigintDeclinesAndRestoresEcho) {
  PtyChild pty;
  if (!pty.open()) FS_FIXTURE_UNAVAILABLE("no pseudo-terminal (posix_openpt)");
  pty.start([] {
    signal(SIGINT, onSigint);
    const int rc = askPassphrase();
    return g_caught == 1 ? rc : 4;  // the process's own handler ran
  });
  ASSERT_TRUE(pty.waitForOutput("Passphrase for /keys/id_test: "));
  ASSERT_TRUE(pty.waitForEcho(false));
  pty.type("x\x03");
  const int status = pty.wait();
  ASSERT_NE(status, -1) << "still reading the passphrase after Ctrl-C";
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);  // declined, handler ran
  EXPECT_TRUE(pty.echo());
}

TEST(TerminalPrompterTest, APassphraseIsReadWithoutEchoAndEchoComesBack) {
  PtyChild pty;
  if (!pty.open()) FS_FIXTURE_UNAVAILABLE("no pseudo-terminal (posix_openpt)");
  pty.start([] { return askPassphrase(); });
  ASSERT_TRUE(pty.waitForOutput("Passphrase for /keys/id_test: "));
  ASSERT_TRUE(pty.waitForEcho(false));
  pty.type("secret\n");
  const int status = pty.wait();
  ASSERT_NE(status, -1);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(pty.echo());
}

// Item 3: in batch mode the refusal shows the OpenSSH-like text naming the stored keys.
TEST(TerminalPrompterTest, AHostKnownWithAnotherKeyTypeIsShownAsSuch) {
  std::ostringstream err;
  TerminalPrompter prompter(true, err);
  app::remote::HostKeyQuestion q;
  q.kind = app::remote::HostKeyQuestion::Kind::kOtherType;
  q.host = "10.0.0.5";
  q.port = 2222;
  q.alias = "gpu";
  q.key_type = "ssh-ed25519";
  q.fingerprint_sha256 = "SHA256:offered";
  q.known_keys = {{"ecdsa-sha2-nistp256", "SHA256:stored", "/home/u/.ssh/known_hosts", 7}};
  EXPECT_TRUE(prompter.asksAbout(q.kind));
  EXPECT_EQ(prompter.hostKey(q), app::remote::HostKeyAnswer::kReject);
  const std::string text = err.str();
  EXPECT_NE(text.find("'[10.0.0.5]:2222' (gpu)"), std::string::npos) << text;
  EXPECT_NE(text.find("keys of other types are known for this host"), std::string::npos) << text;
  EXPECT_NE(text.find("ecdsa-sha2-nistp256 SHA256:stored in /home/u/.ssh/known_hosts:7"), std::string::npos)
      << text;
  EXPECT_NE(text.find("ssh-ed25519 SHA256:offered"), std::string::npos) << text;
}

}  // namespace
}  // namespace fs::studio::remote
