#include "studio/remote/terminal_text.h"

#include <cstdio>

// NOTE [Remote text on a terminal]
// Rank logs, agent events, error messages, squeue output and followed events
// come from remote hosts, where anyone who can write a run directory (or a job
// name) chooses their bytes. On a terminal, ESC starts a sequence that can set
// the window title, clear the screen, move the cursor over what was printed,
// or (on some terminals) answer back into the input; a '\r' overwrites a line;
// a C1 CSI (U+009B, or the raw byte 0x9B on an 8-bit terminal) does what ESC [
// does. So the `remote` CLI wraps stdout and stderr, when they are terminals,
// in a TerminalTextBuf (remote_cli.cpp): every such character is written as a
// visible escape. Pipes and files get the bytes as they are. The command's own
// line redraws (the follow progress line, the wait line) go around it through
// writeTerminalControl.

namespace fs::studio::remote {
namespace {

bool isContinuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

// The length of the valid UTF-8 sequence at text[i] (lead byte >= 0x80): 0 when
// it is not one, or -1 when the text ends before it could be told.
int utf8Length(std::string_view text, std::size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  int n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k < n; ++k) {
    if (i + k >= text.size()) return -1;
    const auto b = static_cast<unsigned char>(text[i + k]);
    if (k == 1 ? (b < lo || b > hi) : !isContinuation(b)) return 0;
  }
  return n;
}

void appendEscape(std::string* out, const char* form, unsigned value) {
  char buf[8];
  std::snprintf(buf, sizeof buf, form, value);
  out->append(buf);
}

}  // namespace

std::string escapeTerminalText(std::string_view text, bool complete, std::size_t* rest) {
  std::string out;
  out.reserve(text.size());
  if (rest) *rest = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F)
        appendEscape(&out, "\\x%02x", c);
      else
        out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    const int n = utf8Length(text, i);
    if (n < 0 && !complete) {
      if (rest) *rest = text.size() - i;
      break;
    }
    if (n <= 0) {  // not UTF-8: the byte alone
      if (c <= 0x9F)
        appendEscape(&out, "\\x%02x", c);
      else
        out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (c == 0xC2 && second <= 0x9F)  // U+0080 .. U+009F
      appendEscape(&out, "\\u%04x", second);
    else
      out.append(text.substr(i, static_cast<std::size_t>(n)));
    i += static_cast<std::size_t>(n);
  }
  return out;
}

TerminalTextBuf::~TerminalTextBuf() {
  drain(true);
  target_->pubsync();
}

void TerminalTextBuf::drain(bool complete) {
  if (pending_.empty()) return;
  std::size_t rest = 0;
  const std::string escaped = escapeTerminalText(pending_, complete, &rest);
  target_->sputn(escaped.data(), static_cast<std::streamsize>(escaped.size()));
  pending_.erase(0, pending_.size() - rest);
}

void TerminalTextBuf::writeRaw(std::string_view control) {
  drain(true);
  target_->sputn(control.data(), static_cast<std::streamsize>(control.size()));
}

TerminalTextBuf::int_type TerminalTextBuf::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  pending_.push_back(traits_type::to_char_type(ch));
  drain(false);
  return ch;
}

std::streamsize TerminalTextBuf::xsputn(const char* s, std::streamsize n) {
  pending_.append(s, static_cast<std::size_t>(n));
  drain(false);
  return n;
}

int TerminalTextBuf::sync() {
  drain(false);
  return target_->pubsync();
}

void writeTerminalControl(std::ostream& os, std::string_view control) {
  if (auto* buf = dynamic_cast<TerminalTextBuf*>(os.rdbuf())) {
    buf->writeRaw(control);
  } else {
    os << control;
  }
}

}  // namespace fs::studio::remote
