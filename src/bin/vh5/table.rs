//! Slice tables for `vh5 read --table FILE`: text tables as `np.savetxt` and spreadsheets
//! write them.
//!
//! Format: one row per line; fields separated by commas or by whitespace (spaces, tabs); for a
//! dataset of n axes either 3n fields `src_start_0..src_start_{n-1}, dst_start_0.., count_0..`
//! or 5n fields that add `src_step_0.., dst_step_0..` (elements; every row the same width).
//! Fields are non-negative integers, also written as decimal floats whose exact value is an
//! integer (`1.0`, `1.000000000000000000e+01`, np.savetxt's default format) below 2^53 (from
//! 2^53 on a float's text may be a rounded rendering of another integer). The text is
//! evaluated exactly, not through an f64: `0.99999999999999999` is refused (it is not 1),
//! naming line and column. Blank lines and everything after `#` are ignored; the first other
//! line may be a header: it is one only when none of its fields is a number AND every field
//! is a name (an ASCII letter or `_`, then letters, digits or `_ . - [ ] ( )`), and it must
//! have as many fields as the data rows. A first line such as `1O 2 0 0 3 4` (a typo),
//! `"0","0","1"` (quotes) or `0x0 0x0 0x2` (hex) is a data row and an error, not a header
//! skipped silently; `vh5 read` says which line it skipped. Errors (`VH5_ERR_INVALID_ARGUMENT`) name the file, the line and the
//! column; a table without data rows is an error naming the file. An integer above 2^64 - 1
//! is refused as such; a leading UTF-8 byte order mark is skipped.

use vh5::error::{Error, ErrorKind, Result};

/// `vh5 read --help`'s description of the table format.
pub const FORMAT_HELP: &str = "  Table format (--table): one row per line, fields separated by commas or whitespace (spaces,
  tabs: what np.savetxt writes); for a dataset of n axes 3n fields src_start.., dst_start..,
  count.. or 5n fields that add src_step.., dst_step.. (elements). Fields are non-negative
  integers; decimal floats whose exact value is an integer, such as 1.000000000000000000e+01,
  are accepted below 2^53 (write larger values as integers; 0.99999999999999999 is not 1).
  Blank lines and text after # are ignored; the first other line may be a header: it is one
  only when NONE of its fields is a number and EVERY field is a name (a letter or _, then
  letters, digits or _ . - [ ] ( ): src_start_0,count_0,...), with as many fields as the
  data rows; the output names the line skipped. A leading UTF-8 byte order mark is skipped. A first line with a number, a quote or a
  hex field (1O 2 0 0 3 4: letter O typed for zero) is a data row and an error. A
  malformed line is an error naming the file, line, data row and column; a table with no
  data rows is an error.";

/// Rows of a table as five flat columns (src_start, dst_start, count, src_step, dst_step),
/// each `n * ndim` values in row order; the step columns are empty unless `steps`.
#[derive(Default)]
pub struct Table {
    pub cols: [Vec<u64>; 5],
    pub steps: bool,
    pub n: usize,
    /// The header line skipped (1-based line number), if the table had one.
    pub header_line: Option<usize>,
}

/// The fields of one line (comments removed): split at commas when it has any (then every
/// field must be non-empty), else at runs of whitespace. Empty when the line is blank.
fn fields(line: &str) -> Option<Vec<&str>> {
    let line = line.split('#').next().unwrap_or("").trim();
    if line.is_empty() {
        return Some(vec![]);
    }
    if line.contains(',') {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        // "1,,2" or "1 2,3": refused rather than guessed
        if f.iter().any(|x| x.is_empty() || x.contains(char::is_whitespace)) {
            return None;
        }
        Some(f)
    } else {
        Some(line.split_whitespace().collect())
    }
}

/// A field as a non-negative integer: decimal digits (exact up to 2^64 - 1), or a decimal
/// float (`1.0`, `1.5e1`, `1.000000000000000000e+01`) whose exact decimal value is an integer
/// below 2^53. The text is evaluated as written, digit by digit, never through an f64: an
/// f64 parse rounds `0.99999999999999999` to 1.0, which then passed an integer check.
fn number(f: &str) -> std::result::Result<u64, String> {
    if let Ok(v) = f.parse::<u64>() {
        return Ok(v);
    }
    let digits = f.strip_prefix('+').unwrap_or(f);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        // only digits, yet not a u64: more than 2^64 - 1 (not a float: it has no point)
        return Err(format!("an integer above 2^64 - 1 ({}), the largest coordinate or count a table can hold", u64::MAX));
    }
    let Some(d) = Decimal::parse(f) else {
        return Err("not a number".into());
    };
    if d.negative && !d.digits.is_empty() {
        return Err("not a non-negative integer".into());
    }
    if d.exp10 < 0 {
        return Err("not an integer (it has a non-zero fraction)".into());
    }
    let limit = 1u64 << 53;
    let mut v: u64 = 0;
    for &b in d.digits.iter().chain(std::iter::repeat_n(&b'0', d.exp10.min(20) as usize)) {
        v = v.saturating_mul(10).saturating_add(u64::from(b - b'0'));
    }
    if d.exp10 > 20 || v >= limit {
        return Err("a float of magnitude 2^53 or more, which cannot be trusted to be the integer written (2^53 + 1 reads as 2^53): write it as an integer".into());
    }
    Ok(v)
}

/// A decimal number in float notation as exact digits: value = `digits` x 10^`exp10`, with
/// `digits` free of leading and trailing zeros (empty for zero).
struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    exp10: i64,
}

impl Decimal {
    /// `[+-]digits[.digits][(e|E)[+-]digits]` (digits on at least one side of the point);
    /// `None` for anything else (hex, `inf`, `nan`, quotes, `1_000`, ...).
    fn parse(f: &str) -> Option<Decimal> {
        let (negative, rest) = match f.as_bytes().first()? {
            b'-' => (true, &f[1..]),
            b'+' => (false, &f[1..]),
            _ => (false, f),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(k) => (&rest[..k], Some(&rest[k + 1..])),
            None => (rest, None),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
            return None;
        }
        let mut exp10: i64 = match exp {
            None => 0,
            Some(e) => {
                let body = e.strip_prefix(['+', '-']).unwrap_or(e);
                if body.is_empty() || !all_digits(body) {
                    return None;
                }
                // Saturate: an exponent this large is out of range whatever the digits.
                let mag = body.parse::<i64>().unwrap_or(i64::MAX / 4).min(i64::MAX / 4);
                if e.starts_with('-') {
                    -mag
                } else {
                    mag
                }
            }
        };
        exp10 -= frac.len() as i64;
        let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).skip_while(|&b| b == b'0').collect();
        while digits.last() == Some(&b'0') {
            digits.pop();
            exp10 += 1;
        }
        if digits.is_empty() {
            exp10 = 0;
        }
        Some(Decimal { negative, digits, exp10 })
    }
}

/// A field that reads as a number (integer or decimal float, exponent form), as opposed to a
/// header name. `inf` / `nan` have no digit: header words, not numbers.
fn is_numeric(f: &str) -> bool {
    Decimal::parse(f).is_some()
}

/// A header field: a name, starting with an ASCII letter or `_`, of ASCII letters, digits and
/// `_ . - [ ] ( )`. Anything else (quotes, `0x10`, `1O`, spaces) is data or an error, never a
/// header skipped silently.
fn is_header_name(f: &str) -> bool {
    let mut b = f.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_') && b.all(|c| c.is_ascii_alphanumeric() || b"_.-[]()".contains(&c))
}

/// What column `c` (0-based) of a row holds for a dataset of `ndim` axes, e.g. `count_1`.
fn column_name(c: usize, ndim: usize) -> String {
    const GROUPS: [&str; 5] = ["src_start", "dst_start", "count", "src_step", "dst_step"];
    match GROUPS.get(c / ndim) {
        Some(g) => format!("{g}_{}", c % ndim),
        None => "an extra field".into(),
    }
}

/// Why a first line that failed to parse was not a header (appended to its error).
const HEADER_RULE: &str =
    "; the first line is a header only when none of its fields is a number and every field is a name (a letter or _, then letters, digits or _ . - [ ] ( ); no quotes)";

/// Parse the text of table `path` for a dataset of `ndim` >= 1 axes.
pub fn parse(path: &str, text: &str, ndim: usize) -> Result<Table> {
    let bad = |ln: usize, m: String| Error::new(ErrorKind::InvalidArgument, format!("{path} line {}: {m}", ln + 1));
    let expect = format!("expected per line {} fields (src_start.., dst_start.., count..) or {} (+ src_step.., dst_step..) for {ndim} axes", 3 * ndim, 5 * ndim);
    let mut t = Table::default();
    let mut seen_line = false;
    let mut header_fields = 0;
    // A leading UTF-8 byte order mark (what Windows editors and spreadsheets write) is not
    // part of the first field.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (ln, line) in text.lines().enumerate() {
        let f = fields(line).ok_or_else(|| bad(ln, format!("an empty field or a field with spaces between commas; {expect}")))?;
        if f.is_empty() {
            continue;
        }
        let first = !seen_line;
        seen_line = true;
        let parsed: Vec<std::result::Result<u64, String>> = f.iter().map(|x| number(x)).collect();
        if first && f.iter().all(|x| !is_numeric(x) && is_header_name(x)) {
            t.header_line = Some(ln + 1); // a header line: names only, no number
            header_fields = f.len();
            continue;
        }
        // On the first line, say why it was not taken as a header (a typo such as `1O`).
        let not_header = if first { HEADER_RULE } else { "" };
        let mut vals = Vec::with_capacity(f.len());
        for (c, (x, p)) in f.iter().zip(parsed).enumerate() {
            let what = column_name(c, ndim);
            vals.push(p.map_err(|why| bad(ln, format!("data row {}, column {} ({what}): {x:?} is {why}{not_header}; {expect}", t.n, c + 1)))?);
        }
        let groups = vals.len() / ndim;
        if vals.len() % ndim != 0 || !(groups == 3 || groups == 5) {
            return Err(bad(ln, format!("{} fields; {expect}", vals.len())));
        }
        if t.n > 0 && (groups == 5) != t.steps {
            return Err(bad(ln, format!("{} fields where the rows above have {}; every row needs the same fields", vals.len(), if t.steps { 5 * ndim } else { 3 * ndim })));
        }
        if let (Some(h), 0) = (t.header_line, t.n) {
            if header_fields != vals.len() {
                return Err(bad(
                    h - 1,
                    format!("taken as a header, but it has {header_fields} fields and the first data row (line {}) {}: a header names every column", ln + 1, vals.len()),
                ));
            }
        }
        t.steps = groups == 5;
        for g in 0..groups {
            t.cols[g].extend(&vals[g * ndim..(g + 1) * ndim]);
        }
        t.n += 1;
    }
    if t.n == 0 {
        return Err(Error::new(ErrorKind::InvalidArgument, format!("{path}: the table has no data rows ({expect})")));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_whitespace_tabs_comments_header_and_savetxt_floats() {
        let want = parse("t.csv", "0,0,0,0,2,2\n1,2,1,0,1,1\n", 2).unwrap();
        for text in [
            "# rows\nsrc0 src1 dst0 dst1 c0 c1\n0 0\t0 0\t2 2\n1   2 1 0 1 1 # second\n",
            "0.000000000000000000e+00 0.000000000000000000e+00 0.000000000000000000e+00 0.000000000000000000e+00 2.000000000000000000e+00 2.000000000000000000e+00\n1 2 1 0 1 1\n",
            "src_start_0, src_start_1, dst_start_0, dst_start_1, count_0, count_1\n0, 0, 0, 0, 2, 2\n\n1 ,2,1,0,1,1\n",
        ] {
            let t = parse("t.csv", text, 2).unwrap();
            assert_eq!((t.n, t.steps, &t.cols), (want.n, want.steps, &want.cols), "{text:?}");
        }
        let t = parse("t.csv", "# c\nsrc dst count\n1 0 3\n4\t3\t1\n", 1).unwrap();
        assert_eq!((t.n, t.steps, t.header_line), (2, false, Some(2)));
        assert_eq!(t.cols[0], [1, 4]);
        assert_eq!(t.cols[2], [3, 1]);
        let t = parse("t.csv", "1.000000000000000000e+00,0,2.0\n", 1).unwrap();
        assert_eq!((t.cols[0][0], t.cols[2][0]), (1, 2));
        let t = parse("t.csv", "1 0 1 2 1\n", 1).unwrap();
        assert!(t.steps && t.cols[3] == [2] && t.cols[4] == [1]);
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let e = parse("t.csv", "1 0 1\n2 x 1\n", 1).err().unwrap();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.starts_with("t.csv line 2: data row 1, column 2 (dst_start_0): \"x\" is not a number"), "{}", e.message);
        let e = parse("t.csv", "1 0 1\n1.5 0 1\n", 1).err().unwrap();
        assert!(e.message.contains("line 2: data row 1, column 1 (src_start_0): \"1.5\" is not an integer (it has a non-zero fraction)"), "{}", e.message);
        let e = parse("t.csv", "1 0 1\n1 0\n", 1).err().unwrap();
        assert!(e.message.contains("line 2: 2 fields"), "{}", e.message);
        let e = parse("t.csv", "1 0 1\n1 0 1 1 1\n", 1).err().unwrap();
        assert!(e.message.contains("same fields"), "{}", e.message);
        let e = parse("t.csv", "1,,1\n", 1).err().unwrap();
        assert!(e.message.contains("line 1: an empty field"), "{}", e.message);
        for empty in ["", "# only\n\n", "a b c\n"] {
            let e = parse("t.csv", empty, 1).err().unwrap();
            assert!(e.message.starts_with("t.csv: the table has no data rows"), "{}", e.message);
        }
        let e = parse("t.csv", "-1 0 1\n", 1).err().unwrap();
        assert!(e.message.contains("\"-1\" is not a non-negative integer"), "{}", e.message);
    }

    #[test]
    fn header_only_when_no_field_is_a_number_a_typo_in_the_first_row_is_an_error() {
        // `1O` (letter O) in the first data row made it a header, skipped silently
        for text in ["1O 2 0 0 3 4\n10 11 3 0 3 4\n", "src0 src1 dst0 dst1 c0 2\n1 2 0 0 3 4\n", "a,b,1e3,c,d,e\n1,2,0,0,3,4\n"] {
            let e = parse("t.csv", text, 2).err().unwrap();
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
            assert!(e.message.starts_with("t.csv line 1: data row 0, column "), "{}", e.message);
            assert!(e.message.contains("the first line is a header only when none of its fields is a number"), "{}", e.message);
        }
        // the same typo further down says nothing about headers
        let e = parse("t.csv", "10 11 3 0 3 4\n1O 2 0 0 3 4\n", 2).err().unwrap();
        assert!(e.message.starts_with("t.csv line 2: data row 1, column 1 (src_start_0): \"1O\" is not a number; expected"), "{}", e.message);
        // headers: no numeric field (words with digits inside, inf/nan words included)
        for (text, line) in [("\nsrc0 src1 dst0 dst1 c0 c1\n1 2 0 0 3 4\n", Some(2)), ("a_1,b2,inf,nan,x,y\n1,2,0,0,3,4\n", Some(1)), ("1 2 0 0 3 4\n", None)] {
            let t = parse("t.csv", text, 2).unwrap();
            assert_eq!((t.n, t.header_line, &t.cols[0]), (1, line, &vec![1, 2]), "{text:?}");
        }
        // only the first line may be a header
        let e = parse("t.csv", "1 2 0 0 3 4\nsrc0 src1 dst0 dst1 c0 c1\n", 2).err().unwrap();
        assert!(e.message.starts_with("t.csv line 2: data row 1, column 1"), "{}", e.message);
    }

    #[test]
    fn float_coordinates_from_2_pow_53_on_are_refused_integers_stay_exact() {
        // 2^53 + 1 as an integer is exact; as a float it parses to 2^53 and would read the
        // wrong element: refused, naming line, row, column and the value as written
        let t = parse("t.csv", "9007199254740993,0,1\n18446744073709551615 0 1\n", 1).unwrap();
        assert_eq!(t.cols[0], [9_007_199_254_740_993, u64::MAX]);
        let t = parse("t.csv", "9007199254740991.0,0,1\n9.007199254740991e15 0 1\n", 1).unwrap();
        assert_eq!(t.cols[0], [9_007_199_254_740_991; 2]);
        for big in ["9.007199254740993e15", "9007199254740992.0", "9.007199254740992e15", "1e300", "1.8446744073709552e19"] {
            let e = parse("t.csv", &format!("0 0 1 0 0 1\n0 0 0 0 1 {big}\n"), 2).err().unwrap();
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
            let want = format!("t.csv line 2: data row 1, column 6 (count_1): \"{big}\" is a float of magnitude 2^53 or more");
            assert!(e.message.starts_with(&want) && e.message.contains("write it as an integer"), "{}", e.message);
        }
    }

    #[test]
    fn float_text_is_evaluated_exactly_not_rounded_through_an_f64() {
        // 0.99999999999999999 parses as the f64 1.0: it was accepted as 1
        for (text, col) in [("0.99999999999999999 0 1\n", 1), ("0 1.00000000000000001e0 1\n", 2), ("0 0 2.5e-1\n", 3), ("0 0 1e-400\n", 3)] {
            let e = parse("t.csv", text, 1).err().unwrap();
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
            assert!(e.message.starts_with(&format!("t.csv line 1: data row 0, column {col} ")), "{}", e.message);
            assert!(e.message.contains("is not an integer (it has a non-zero fraction)"), "{}", e.message);
        }
        let t = parse("t.csv", "1.50e1 +2 .3e1\n0.0 -0 120E-1\n", 1).unwrap();
        assert_eq!((t.cols[0].clone(), t.cols[1].clone(), t.cols[2].clone()), (vec![15, 0], vec![2, 0], vec![3, 12]));
        for bad in ["0x10", "1_000", "1e", ".", "1.2.3", "1e+-2", "--1", "inf"] {
            let e = parse("t.csv", &format!("0 0 1\n0 0 {bad}\n"), 1).err().unwrap();
            assert!(e.message.contains(&format!("\"{bad}\" is not a number")), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn integers_above_u64_max_are_named_and_a_leading_bom_is_skipped() {
        for big in ["18446744073709551616", "99999999999999999999", "+99999999999999999999"] {
            let e = parse("t.csv", &format!("0 0 1\n0 0 {big}\n"), 1).err().unwrap();
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
            let want = format!("t.csv line 2: data row 1, column 3 (count_0): \"{big}\" is an integer above 2^64 - 1 (18446744073709551615)");
            assert!(e.message.starts_with(&want) && !e.message.contains("float"), "{}", e.message);
        }
        let t = parse("t.csv", "\u{feff}0,1,2\n", 1).unwrap();
        assert_eq!((t.cols[0][0], t.cols[1][0], t.cols[2][0]), (0, 1, 2));
        let t = parse("t.csv", "\u{feff}src,dst,count\n3 0 1\n", 1).unwrap();
        assert_eq!((t.header_line, t.cols[0][0]), (Some(1), 3));
        // only a leading mark: one inside the text is still an error
        assert!(parse("t.csv", "0 0 1\n\u{feff}0 0 1\n", 1).is_err());
    }

    #[test]
    fn header_is_names_only_with_the_width_of_the_data_rows() {
        // quoted or hex first lines were skipped as headers, losing a data row
        for text in ["\"0\",\"0\",\"1\"\n1,0,1\n", "0x0 0x0 0x2\n1 0 1\n", "src dst 'count'\n1 0 1\n"] {
            let e = parse("t.csv", text, 1).err().unwrap();
            assert!(e.message.starts_with("t.csv line 1: data row 0, column "), "{}", e.message);
            assert!(e.message.contains("and every field is a name"), "{}", e.message);
        }
        let e = parse("t.csv", "src dst\n1 0 1\n", 1).err().unwrap();
        assert!(e.message.starts_with("t.csv line 1: taken as a header, but it has 2 fields and the first data row (line 2) 3"), "{}", e.message);
        let t = parse("t.csv", "src_start[0] dst-start(0) _count.0\n1 0 1\n", 1).unwrap();
        assert_eq!((t.header_line, t.n), (Some(1), 1));
    }
}
