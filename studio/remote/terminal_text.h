// Text for a terminal: what `flamingo-studio remote` writes there passes through
// TerminalTextBuf, which makes every control character of it visible (NOTE
// [Remote text on a terminal] in terminal_text.cpp); the command's own cursor
// moves go around it through writeTerminalControl.
//
// Ownership: a TerminalTextBuf writes to the buffer it is given, which must
// outlive it. Thread-safety: none; the command's thread only.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace fs::studio::remote {

// `text` with C0 controls other than '\n' and '\t', DEL and C1 controls (U+0080
// to U+009F, and bytes 0x80 to 0x9F outside valid UTF-8) written as "\xNN"
// ("\u00NN" for an encoded C1); valid UTF-8 and other bytes are unchanged.
// `complete` false: a trailing UTF-8 sequence that may still complete is left
// out, and *rest (not null) says how many bytes that is.
std::string escapeTerminalText(std::string_view text, bool complete = true, std::size_t* rest = nullptr);

// A stream buffer that writes everything through escapeTerminalText to `target`
// (a UTF-8 sequence split between writes is escaped as a whole).
class TerminalTextBuf : public std::streambuf {
 public:
  explicit TerminalTextBuf(std::streambuf* target) : target_(target) {}
  ~TerminalTextBuf() override;
  TerminalTextBuf(const TerminalTextBuf&) = delete;
  TerminalTextBuf& operator=(const TerminalTextBuf&) = delete;

  // Writes what is pending, then `control` as it is.
  void writeRaw(std::string_view control);

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  void drain(bool complete);

  std::streambuf* target_;
  std::string pending_;  // an incomplete UTF-8 sequence at the end of the last write
};

// The command's own terminal control (a '\r', "\x1b[K"): through a TerminalTextBuf
// unescaped, to any other stream as it is.
void writeTerminalControl(std::ostream& os, std::string_view control);

}  // namespace fs::studio::remote
