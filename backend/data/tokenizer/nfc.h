// Unicode NFC (canonical decomposition, canonical ordering, canonical
// composition), for the NFC normalizer GPT-NeoX's and MPT's tokenizer.json
// declare. Tables from Python's unicodedata (gen_nfc_tables.py ->
// nfc_tables.inc); Hangul is algorithmic. Internal to fs_tokenizer.
//
// Thread-safety: stateless.
#pragma once

#include <string>
#include <string_view>

namespace fs::data::detail {

// `text` in NFC. Bytes that are not UTF-8 are kept as they are and block
// composition across them. Text whose code points are all below U+0300 (ASCII,
// Latin-1, Latin Extended-A/B) is already NFC and is returned as is, quickly.
std::string toNfc(std::string_view text);

// The Unicode version of the tables (Python's unicodedata.unidata_version).
const char* nfcUnicodeVersion();

}  // namespace fs::data::detail
