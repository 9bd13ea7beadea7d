// Whether a string names a host: an IPv4 or IPv6 address, or a host name as
// RFC 1123 allows (launch.master_addr; NOTE [Host addresses]).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace fs::protocol {

// NOTE [Host addresses]
// launch.master_addr reaches torchrun's --master_addr, the ranks' MASTER_ADDR
// and remote command lines (quoted, NOTE [Remote command lines]); a value
// that is no address at all fails late and far away, and one holding shell
// syntax is a hazard wherever someone pastes it into a shell. So it must be
// one of: a dotted-quad IPv4 address (four numbers 0..255), an IPv6 address
// (hex groups and ::, optionally ending in an IPv4 address; no zone, no
// brackets), or a host name: dot-separated labels of letters, digits and
// '-', 1..63 bytes each, not starting or ending with '-', 253 bytes in all,
// one final '.' allowed; a name of digits and dots only must be an IPv4
// address. The unspecified addresses 0.0.0.0 and :: name no host a rank could
// connect to and are refused too.

// "" when `text` is an address or host name by those rules; otherwise what is
// wrong with it, e.g. "label 'a_b' holds '_', which a host name cannot".
std::string hostAddressProblem(std::string_view text);

}  // namespace fs::protocol
