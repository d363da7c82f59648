//! Slice tables for `vh5 read --table FILE`: text tables as `np.savetxt` and spreadsheets
//! write them.
//!
//! Format: one row per line; fields separated by commas or by whitespace (spaces, tabs); for a
//! dataset of n axes either 3n fields `src_start_0..src_start_{n-1}, dst_start_0.., count_0..`
//! or 5n fields that add `src_step_0.., dst_step_0..` (elements; every row the same width).
//! Fields are non-negative integers, also written as floats with no fraction (`1.0`,
//! `1.000000000000000000e+01`, np.savetxt's default format) below 2^53 (from 2^53 on a float
//! no longer tells which integer was meant: 2^53 + 1 reads as 2^53). Blank lines and
//! everything after `#` are ignored; the first other line may be a header: it is one only when
//! none of its fields is a number (a first line such as `1O 2 0 0 3 4`, with a typo in one
//! field, is a data row and an error, not a header skipped silently); `vh5 read` says which
//! line it skipped. Errors (`VH5_ERR_INVALID_ARGUMENT`) name the file, the line and the
//! column; a table without data rows is an error naming the file.

use vh5::error::{Error, ErrorKind, Result};

/// `vh5 read --help`'s description of the table format.
pub const FORMAT_HELP: &str = "  Table format (--table): one row per line, fields separated by commas or whitespace (spaces,
  tabs: what np.savetxt writes); for a dataset of n axes 3n fields src_start.., dst_start..,
  count.. or 5n fields that add src_step.., dst_step.. (elements). Fields are non-negative
  integers; floats without a fraction such as 1.000000000000000000e+01 are accepted below
  2^53 (write larger values as integers). Blank lines and text after # are ignored; the
  first other line may be a header: it is one only when NONE of its fields is a number
  (src0,src1,...), and the output names the line skipped; a first line with some numbers
  (1O 2 0 0 3 4: letter O typed for zero) is a data row and an error. A malformed line is
  an error naming the file, line, data row and column; a table with no data rows is an
  error.";

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

/// 2^53: from here on an f64 no longer holds every integer, so a float field this large may
/// not be the integer that was written (`9.007199254740993e15`, 2^53 + 1, parses as 2^53).
const FLOAT_EXACT_LIMIT: f64 = 9_007_199_254_740_992.0;

/// A field as a non-negative integer: decimal digits (exact up to 2^64 - 1), or a float with
/// no fraction below 2^53 (below that every integer-valued f64 is exactly the one written).
fn number(f: &str) -> std::result::Result<u64, String> {
    if let Ok(v) = f.parse::<u64>() {
        return Ok(v);
    }
    match f.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= FLOAT_EXACT_LIMIT => {
            Err("a float of magnitude 2^53 or more, which cannot be trusted to be the integer written (2^53 + 1 reads as 2^53): write it as an integer".into())
        }
        Ok(x) if x >= 0.0 && x.fract() == 0.0 => Ok(x as u64),
        Ok(_) => Err("not a non-negative integer".into()),
        Err(_) => Err("not a number".into()),
    }
}

/// A field that reads as a number (integer, float, exponent form), as opposed to a header
/// name. `inf` / `nan` parse as f64 but have no digit: header words, not numbers.
fn is_numeric(f: &str) -> bool {
    f.parse::<f64>().is_ok() && f.bytes().any(|b| b.is_ascii_digit())
}

/// What column `c` (0-based) of a row holds for a dataset of `ndim` axes, e.g. `count_1`.
fn column_name(c: usize, ndim: usize) -> String {
    const GROUPS: [&str; 5] = ["src_start", "dst_start", "count", "src_step", "dst_step"];
    match GROUPS.get(c / ndim) {
        Some(g) => format!("{g}_{}", c % ndim),
        None => "an extra field".into(),
    }
}

/// Parse the text of table `path` for a dataset of `ndim` >= 1 axes.
pub fn parse(path: &str, text: &str, ndim: usize) -> Result<Table> {
    let bad = |ln: usize, m: String| Error::new(ErrorKind::InvalidArgument, format!("{path} line {}: {m}", ln + 1));
    let expect = format!("expected per line {} fields (src_start.., dst_start.., count..) or {} (+ src_step.., dst_step..) for {ndim} axes", 3 * ndim, 5 * ndim);
    let mut t = Table::default();
    let mut seen_line = false;
    for (ln, line) in text.lines().enumerate() {
        let f = fields(line).ok_or_else(|| bad(ln, format!("an empty field or a field with spaces between commas; {expect}")))?;
        if f.is_empty() {
            continue;
        }
        let first = !seen_line;
        seen_line = true;
        let parsed: Vec<std::result::Result<u64, String>> = f.iter().map(|x| number(x)).collect();
        if first && !f.iter().any(|x| is_numeric(x)) {
            t.header_line = Some(ln + 1); // a header line: no field is a number
            continue;
        }
        // On the first line, say why it was not taken as a header (a typo such as `1O`).
        let not_header = if first { "; the first line is a header only when none of its fields is a number" } else { "" };
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
        assert!(e.message.contains("line 2: data row 1, column 1 (src_start_0): \"1.5\" is not a non-negative integer"), "{}", e.message);
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
}
