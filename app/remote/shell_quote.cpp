#include "app/remote/shell_quote.h"

namespace fs::app::remote {
namespace {

bool isBareByte(unsigned char c) {
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '_':
    case '@':
    case '%':
    case '+':
    case '=':
    case ':':
    case ',':
    case '.':
    case '/':
    case '-':
      return true;
    default:
      return false;
  }
}

bool canStayBare(std::string_view arg) {
  if (arg.empty()) return false;
  for (const char c : arg) {
    if (!isBareByte(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string singleQuoted(std::string_view arg) {
  std::string out;
  out.reserve(arg.size() + 2);
  out += '\'';
  for (const char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

}  // namespace

std::string shellQuote(std::string_view arg) {
  if (canStayBare(arg)) return std::string(arg);
  return singleQuoted(arg);
}

protocol::StatusOr<std::string> shellCommand(const std::vector<std::string>& argv) {
  if (argv.empty()) return protocol::Status::invalidArgument("remote command: empty argument vector");
  std::string line;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.find('\0') != std::string::npos) {
      return protocol::Status::invalidArgument("remote command: argument " + std::to_string(i) +
                                               " contains a NUL byte, which a command line cannot carry");
    }
    if (i > 0) line += ' ';
    // A bare first word "A=B" would be a variable assignment, not a command.
    if (i == 0 && arg.find('=') != std::string::npos) {
      line += singleQuoted(arg);
    } else {
      line += shellQuote(arg);
    }
  }
  return line;
}

}  // namespace fs::app::remote
