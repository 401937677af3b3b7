#!/usr/bin/env python3
"""Writes src/encoder/wordpiece_tables.inc: the Unicode tables of the BERT WordPiece tokenizer
(src/encoder/wordpiece.cpp), as Hugging Face tokenizers' BertNormalizer and BertPreTokenizer
use them.

  /tmp/refvenv/bin/python tests/golden/gen_wordpiece_tables.py                     (the default)
  python3 tests/golden/gen_wordpiece_tables.py --source unicodedata        (no packages needed)

Flags of a code point:
  kMark        removed by strip_accents after NFD (unicode_categories' is_mark_nonspacing: Mn)
  kPunctuation its own pre-token (char::is_ascii_punctuation, or is_punctuation: any P*)
  kRemoved     dropped by clean_text: \\0, U+FFFD, and unicode_categories' is_other (Cc, Cf, Co;
               not Cn) except \\t \\n \\r
  kWhitespace  \\t \\n \\r or White_Space (char::is_whitespace): a space after clean_text, and a
               split point of the pre-tokeniser
  kCjk         spaced out by handle_chinese_chars (tokenizers' is_chinese_char)
plus the canonical combining class of each code point with a non-zero one (NFD's reordering),
the full canonical decomposition of each code point that has one (Hangul syllables excluded:
wordpiece.cpp decomposes them arithmetically) and each code point's own full lowercase mapping
(char::to_lowercase, one character at a time, so final sigma never applies).

tokenizers takes Mn, P* and Cc/Cf/Co from the unicode_categories crate, which is older Unicode
than Python's, and lowercases with Rust's std, which is newer: about 800 code points differ from
Python's unicodedata. So by default (--source tokenizers) the flags and the lowercase map are read
off tokenizers itself (decompositions from its NFD normaliser), one code point at a time;
combining classes always come from unicodedata. The script then checks the tables against
BertNormalizer and BertPreTokenizer for every code point and prints the differences (none with
--source tokenizers).
--source unicodedata derives everything from unicodedata, with BERT's ranges for kCjk.
White_Space (PropList.txt) is not in unicodedata; its 25 code points, stable since Unicode 6.3,
are listed here.
"""

import argparse
import os
import string
import sys
import textwrap
import unicodedata

WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
               (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F),
               (0x3000, 0x3000)]

# BERT's _is_chinese_char (tokenizers starts its fifth range at 0x2B920, not 0x2B820).
CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
       (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]

MARK, PUNCTUATION, REMOVED, WHITESPACE, CJK_FLAG = 1, 2, 4, 8, 16
NAMES = [(MARK, "kMark"), (PUNCTUATION, "kPunctuation"), (REMOVED, "kRemoved"),
         (WHITESPACE, "kWhitespace"), (CJK_FLAG, "kCjk")]

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
CODE_POINTS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]


def ranges_set(ranges):
    out = set()
    for lo, hi in ranges:
        out.update(range(lo, hi + 1))
    return out


def unicodedata_tables():
    """flags {cp: bits} and lowercase {cp: str} from Python's unicodedata."""
    white, cjk = ranges_set(WHITE_SPACE), ranges_set(CJK)
    flags, lower = {}, {}
    for cp in CODE_POINTS:
        ch = chr(cp)
        cat = unicodedata.category(ch)
        f = 0
        if cat == "Mn":
            f |= MARK
        if cat[0] == "P" or (cp < 128 and ch in string.punctuation):
            f |= PUNCTUATION
        if (cat in ("Cc", "Cf", "Co") and ch not in "\t\n\r") or cp in (0, 0xFFFD):
            f |= REMOVED
        if cp in white:
            f |= WHITESPACE
        if cp in cjk:
            f |= CJK_FLAG
        if f:
            flags[cp] = f
        if ch.lower() != ch:
            lower[cp] = ch.lower()
    return flags, lower


def tokenizers_tables():
    """flags {cp: bits} and lowercase {cp: str} probed from tokenizers, one code point at a time."""
    from tokenizers import normalizers, pre_tokenizers

    def bert(clean=False, chinese=False, strip=False, lower=False):
        return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese,
                                          strip_accents=strip, lowercase=lower)

    clean, chinese, strip, lowercase = bert(clean=True), bert(chinese=True), bert(strip=True), \
        bert(lower=True)
    pre = pre_tokenizers.BertPreTokenizer()
    flags, lower = {}, {}
    for cp in CODE_POINTS:
        ch = chr(cp)
        f = 0
        # A mark vanishes on its own; a decomposable character keeps its base.
        if strip.normalize_str(ch) == "":
            f |= MARK
        cleaned = clean.normalize_str(ch)
        if cleaned == "":
            f |= REMOVED
        elif cleaned == " " and ch != " ":
            f |= WHITESPACE
        if chinese.normalize_str(ch) == " %s " % ch:
            f |= CJK_FLAG
        pieces = [w for w, _ in pre.pre_tokenize_str("a%sb" % ch)]
        if pieces == ["a", ch, "b"]:
            f |= PUNCTUATION
        elif pieces == ["a", "b"]:
            if ch != " " and not f & (WHITESPACE | REMOVED):
                sys.exit("U+%04X: a pre-tokeniser split but not clean_text whitespace" % cp)
            f |= WHITESPACE
        elif pieces != ["a%sb" % ch]:
            sys.exit("U+%04X: unexpected pre-tokens %r" % (cp, pieces))
        if ch == " ":
            f |= WHITESPACE
        if f:
            flags[cp] = f
        low = lowercase.normalize_str(ch)
        if low != ch:
            lower[cp] = low
    return flags, lower


def nfd_of(source):
    """NFD of one code point (Hangul syllables left alone), from unicodedata or tokenizers."""
    if source == "tokenizers":
        from tokenizers import normalizers
        nfd = normalizers.NFD().normalize_str
    else:
        def nfd(ch):
            return unicodedata.normalize("NFD", ch)

    def decompose(ch):
        return ch if HANGUL_FIRST <= ord(ch) <= HANGUL_LAST else nfd(ch)
    return decompose


def runs(value_of):
    """[first, last, value]: maximal runs of equal non-zero values."""
    out = []
    for cp in CODE_POINTS:
        v = value_of(cp)
        if not v:
            continue
        if out and out[-1][1] == cp - 1 and out[-1][2] == v:
            out[-1][1] = cp
        else:
            out.append([cp, cp, v])
    return out


def emulate(text, flags, lower, decompose):
    """BertNormalizer (all options on) as wordpiece.cpp runs it on these tables."""
    out = []
    for ch in text:
        f = flags.get(ord(ch), 0)
        if f & REMOVED:
            continue
        if f & WHITESPACE:
            out.append(" ")
        elif f & CJK_FLAG:
            out.extend([" ", ch, " "])
        else:
            out.append(ch)
    chars = []
    for ch in out:
        cp = ord(ch)
        if HANGUL_FIRST <= cp <= HANGUL_LAST:
            chars.extend(unicodedata.normalize("NFD", ch))
        else:
            chars.extend(decompose(ch))
    # Canonical ordering: stable sort of each run of non-zero combining classes.
    i = 0
    while i < len(chars):
        if unicodedata.combining(chars[i]) == 0:
            i += 1
            continue
        j = i
        while j < len(chars) and unicodedata.combining(chars[j]) != 0:
            j += 1
        chars[i:j] = sorted(chars[i:j], key=unicodedata.combining)
        i = j
    chars = [c for c in chars if not flags.get(ord(c), 0) & MARK]
    return "".join(lower.get(ord(c), c) for c in chars)


def check(flags, lower, decompose):
    """Prints where the tables disagree with tokenizers' BertNormalizer / BertPreTokenizer."""
    try:
        from tokenizers import normalizers, pre_tokenizers
    except ImportError:
        print("tokenizers is not importable: tables not checked")
        return
    norm = normalizers.BertNormalizer()
    pre = pre_tokenizers.BertPreTokenizer()
    bad = 0
    for cp in CODE_POINTS:
        ch = chr(cp)
        got, want = emulate(ch, flags, lower, decompose), norm.normalize_str(ch)
        f = flags.get(cp, 0)
        pieces = [w for w, _ in pre.pre_tokenize_str("a%sb" % ch)]
        split = pieces == ["a", "b"] or (pieces == ["a", ch, "b"] and ch == " ")
        isolated = pieces == ["a", ch, "b"] and ch != " "
        if got != want or split != bool(f & WHITESPACE) or isolated != bool(f & PUNCTUATION):
            bad += 1
            if bad <= 20:
                print("  U+%04X (%s): normalised %r, tokenizers %r; pre-tokens %r" %
                      (cp, unicodedata.category(ch), got, want, pieces))
    print("%d code points differ from tokenizers" % bad)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", choices=["tokenizers", "unicodedata"], default="tokenizers")
    args = parser.parse_args()
    if args.source == "tokenizers":
        import tokenizers
        flags, lower = tokenizers_tables()
        source = "tokenizers %s (probed per code point; combining classes from Python %s's " \
                 "unicodedata, Unicode %s)" % (
                     tokenizers.__version__, sys.version.split()[0], unicodedata.unidata_version)
    else:
        flags, lower = unicodedata_tables()
        source = "Python %s's unicodedata (Unicode %s)" % (sys.version.split()[0],
                                                          unicodedata.unidata_version)

    flag_runs = runs(lambda cp: flags.get(cp, 0))
    ccc_runs = runs(lambda cp: unicodedata.combining(chr(cp)))
    decompose = nfd_of(args.source)
    decompositions = {cp: decompose(chr(cp)) for cp in CODE_POINTS
                      if decompose(chr(cp)) != chr(cp)}

    pool, pool_at = [], {}

    def pool_offset(s):
        if s not in pool_at:
            pool_at[s] = len(pool)
            pool.extend(ord(c) for c in s)
        return pool_at[s]

    def map_table(name, what, entries):
        lines = ["// %s:" % what, "// {code point, offset into kMapPool, length}, sorted.",
                 "constexpr MapEntry %s[] = {" % name]
        for cp, s in sorted(entries.items()):
            lines.append("    {0x%04X, %d, %d}," % (cp, pool_offset(s), len(s)))
        return lines + ["};", ""]

    def flag_expr(f):
        return " | ".join(name for bit, name in NAMES if f & bit)

    body = ["// {first, last, flags}: sorted, disjoint ranges of code points with non-zero flags.",
            "constexpr FlagRange kFlagRanges[] = {"]
    body += ["    {0x%04X, 0x%04X, %s}," % (lo, hi, flag_expr(f)) for lo, hi, f in flag_runs]
    body += ["};", "",
             "// {first, last, class}: sorted, disjoint ranges of non-zero canonical combining "
             "classes.", "constexpr CccRange kCccRanges[] = {"]
    body += ["    {0x%04X, 0x%04X, %d}," % (lo, hi, c) for lo, hi, c in ccc_runs]
    body += ["};", ""]
    body += map_table("kDecompose", "Full canonical decompositions (Hangul syllables left out)",
                      decompositions)
    body += map_table("kLowercase", "Full lowercase mappings of one code point", lower)

    head = ["// Generated by tests/golden/gen_wordpiece_tables.py; do not edit. Source:"]
    head += ["// " + line for line in textwrap.wrap(source + ".", 96)]
    head += ["// The code points kDecompose and kLowercase map to.",
            "constexpr char32_t kMapPool[] = {"]
    for i in range(0, len(pool), 8):
        head.append("    " + " ".join("0x%04X," % c for c in pool[i:i + 8]))
    head += ["};", ""]

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = os.path.join(root, "src", "encoder", "wordpiece_tables.inc")
    with open(out, "w", encoding="ascii") as f:
        f.write("\n".join(head + body))
    print("wrote %s: %d flag ranges, %d combining class ranges, %d decompositions, %d lowercase "
          "mappings, pool of %d" % (out, len(flag_runs), len(ccc_runs), len(decompositions),
                                    len(lower), len(pool)))
    check(flags, lower, decompose)


if __name__ == "__main__":
    main()
