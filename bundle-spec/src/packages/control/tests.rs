use super::*;

const SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

#[test]
fn versions_compare_as_dpkg_does() {
    use Ordering::{Equal, Greater, Less};
    let cases = [
        ("1.0~rc1", "1.0", Less),
        ("1:0.1", "2.0", Greater),
        ("1.0-1", "1.0-1+b1", Less),
        ("1.0a", "1.0+", Less),
        ("1.0", "1.0", Equal),
        ("0:1.0", "1.0", Equal),
        ("1.0-1", "1.0-2", Less),
        ("1.10", "1.9", Greater),
        ("1.001", "1.1", Equal),
        ("1.0~rc1", "1.0~rc2", Less),
        ("1.0~~", "1.0~", Less),
        ("1.0~", "1.0", Less),
        ("1.0", "1.0.0", Less),
        ("1.0", "1.0a", Less),
        ("2.36-9+deb12u4", "2.36-9+deb12u10", Less),
        ("1.2.3-1ubuntu1", "1.2.3-1", Greater),
        ("7.88.1-10+deb12u5", "7.88.1-10", Greater),
        ("2:1.0", "1:9.9", Greater),
        ("1.0-1-2", "1.0-1-10", Less),
        ("a", "b", Less),
    ];
    for (a, b, expected) in cases {
        assert_eq!(compare_versions(a, b), expected, "{a} vs {b}");
        assert_eq!(compare_versions(b, a), expected.reverse(), "{b} vs {a}");
    }
}

fn rel(name: &str, qualifier: Option<&str>, constraint: Option<(Op, &str)>) -> Relation {
    Relation {
        name: name.to_owned(),
        arch_qualifier: qualifier.map(str::to_owned),
        constraint: constraint.map(|(op, v)| (op, v.to_owned())),
    }
}

#[test]
fn relations_parse() {
    let cases: [(&str, Relations); 7] = [
        ("", vec![]),
        ("libc6", vec![vec![rel("libc6", None, None)]]),
        (
            "a (>= 1.2) | b:any, c",
            vec![
                vec![
                    rel("a", None, Some((Op::GreaterOrEqual, "1.2"))),
                    rel("b", Some("any"), None),
                ],
                vec![rel("c", None, None)],
            ],
        ),
        (
            "x (<< 2), y (<= 2), z (= 1:2-3), w (>> 0)",
            vec![
                vec![rel("x", None, Some((Op::Less, "2")))],
                vec![rel("y", None, Some((Op::LessOrEqual, "2")))],
                vec![rel("z", None, Some((Op::Equal, "1:2-3")))],
                vec![rel("w", None, Some((Op::Greater, "0")))],
            ],
        ),
        (
            "old (< 1), older (> 2)",
            vec![
                vec![rel("old", None, Some((Op::LessOrEqual, "1")))],
                vec![rel("older", None, Some((Op::GreaterOrEqual, "2")))],
            ],
        ),
        (
            "libfoo1(>=1.0~rc1)",
            vec![vec![rel(
                "libfoo1",
                None,
                Some((Op::GreaterOrEqual, "1.0~rc1")),
            )]],
        ),
        (
            "python3:native,  libstdc++6 (>= 12)",
            vec![
                vec![rel("python3", Some("native"), None)],
                vec![rel("libstdc++6", None, Some((Op::GreaterOrEqual, "12")))],
            ],
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(
            parse_relations("p", "Depends", text).unwrap(),
            expected,
            "{text}"
        );
    }
}

#[test]
fn bad_relations_name_package_field_and_value() {
    let cases = [
        ("a, , b", "empty relation"),
        ("a (>= 1", "lacks its closing"),
        ("a (~ 1)", "lacks its operator"),
        ("a (=> 1)", "`=>` is not a version relation"),
        ("a (>= )", "is not a version"),
        ("Foo", "`Foo` is not a package name"),
        ("a [amd64]", "source packages"),
        ("a <!nocheck>", "source packages"),
        ("a:", "architecture qualifier"),
    ];
    for (text, reason) in cases {
        let error = parse_relations("pkg", "Depends", text).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("package `pkg`: `Depends: {text}` does not parse")),
            "{message}"
        );
        assert!(message.contains(reason), "{text}: {message}");
    }
}

#[test]
fn relations_display_as_written() {
    let relations = parse_relations("p", "Depends", "a:any (>= 1.2) | b").unwrap();
    let shown: Vec<String> = relations[0].iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["a:any (>= 1.2)", "b"]);
}

fn paragraph(extra: &str) -> String {
    format!(
        "Package: socat\nVersion: 1.7.4.4-2\nArchitecture: amd64\n{extra}\
         Filename: pool/main/s/socat/socat_1.7.4.4-2_amd64.deb\nSize: 374396\nSHA256: {SHA}\n"
    )
}

#[test]
fn index_parses_paragraphs_and_continuations() {
    let text = format!(
        "{}\n\n{}\n",
        paragraph(
            "Depends: libc6 (>= 2.34),\n libssl3 (>= 3.0.0)\nPriority: optional\n\
             Description: multipurpose relay\n a long\n .\n description\n"
        ),
        "package: libc6\nversion: 2.36-9\narchitecture: amd64\nPre-Depends: libgcc-s1\n\
         Provides: libc6-x (= 2.36)\nMulti-Arch: same\nPriority: required\nEssential: yes\n\
         Filename: pool/main/g/glibc/libc6_2.36-9_amd64.deb\nSize: 10\nSHA256: "
            .to_owned()
            + SHA
    );
    let entries = parse_index(&text).unwrap();
    assert_eq!(entries.len(), 2);
    let socat = &entries[0];
    assert_eq!(socat.record.name, "socat");
    assert_eq!(socat.record.depends, "libc6 (>= 2.34), libssl3 (>= 3.0.0)");
    assert_eq!(socat.record.filename, "socat_1.7.4.4-2_amd64.deb");
    assert_eq!(socat.path, "pool/main/s/socat/socat_1.7.4.4-2_amd64.deb");
    assert_eq!(socat.record.size, 374_396);
    assert_eq!(socat.record.sha256.hex(), SHA);
    assert_eq!(socat.record.reference, "");
    assert_eq!(socat.priority, "optional");
    assert!(!socat.essential);
    let libc = &entries[1];
    assert_eq!(libc.record.pre_depends, "libgcc-s1");
    assert_eq!(libc.record.provides, "libc6-x (= 2.36)");
    assert_eq!(libc.record.multi_arch, "same");
    assert_eq!(libc.priority, "required");
    assert!(libc.essential);
    assert!(parse_index("\n\n").unwrap().is_empty());
}

#[test]
fn bad_index_names_paragraph_package_and_field() {
    let missing = "Package: a\nVersion: 1\nArchitecture: all\nSize: 1\nSHA256: x\n";
    let cases = [
        (
            format!("{}\n{missing}", paragraph("")),
            "paragraph 2 of the index lacks `Filename`",
        ),
        (
            paragraph("Depends: libc6 (>= \n"),
            "package `socat`: `Depends: libc6 (>=` does not parse",
        ),
        (
            paragraph("").replace("Size: 374396", "Size: big"),
            "package `socat`: `Size: big` does not parse: not a number of bytes",
        ),
        (
            paragraph("").replace(SHA, "ABC"),
            "package `socat`: `SHA256: ABC` does not parse",
        ),
        (
            paragraph("no colon here\n"),
            "paragraph 1 of the index: `no colon here` is not a `Field: value` line",
        ),
        (
            format!(" leading continuation\n{}", paragraph("")),
            "paragraph 1 of the index: ` leading continuation`",
        ),
    ];
    for (text, expected) in cases {
        let message = parse_index(&text).unwrap_err().to_string();
        assert!(message.starts_with(expected), "{message}");
    }
}
