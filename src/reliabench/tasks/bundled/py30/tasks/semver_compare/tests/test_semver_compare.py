import pytest

from semver_compare import Version, compare, parse, sort_versions


def test_parse_simple():
    assert parse("1.2.3") == Version(1, 2, 3, (), ())


def test_parse_zeros_and_large_numbers():
    v = parse("0.0.0")
    assert (v.major, v.minor, v.patch) == (0, 0, 0)
    assert parse("10.200.3000").minor == 200


def test_parse_prerelease_and_build():
    v = parse("1.0.0-alpha.1+exp.sha.5114f85")
    assert v.prerelease == ("alpha", "1")
    assert v.build == ("exp", "sha", "5114f85")
    assert isinstance(v.major, int)


def test_parse_build_only_and_hyphens():
    assert parse("1.0.0+20130313144700").build == ("20130313144700",)
    assert parse("1.0.0-x-y-z.--").prerelease == ("x-y-z", "--")
    assert parse("1.0.0+001.0-a").build == ("001", "0-a")


@pytest.mark.parametrize("bad", ["1.2", "1.2.3.4", "a.b.c", "", "1..3"])
def test_parse_invalid_structure(bad):
    with pytest.raises(ValueError):
        parse(bad)


def test_parse_rejects_leading_zeros_in_core():
    for bad in ("01.2.3", "1.02.3", "1.2.03", "00.0.0"):
        with pytest.raises(ValueError):
            parse(bad)


def test_parse_rejects_prefix_and_whitespace():
    for bad in ("v1.2.3", " 1.2.3", "1.2.3 ", "1.2.3\n"):
        with pytest.raises(ValueError):
            parse(bad)


def test_parse_rejects_bad_prerelease():
    for bad in ("1.2.3-", "1.2.3-alpha..1", "1.2.3-01", "1.2.3-alpha.01", "1.2.3-al_pha", "1.2.3-alpha.", "1.2.3-+b"):
        with pytest.raises(ValueError):
            parse(bad)


def test_parse_rejects_bad_build():
    for bad in ("1.2.3+", "1.2.3+build..1", "1.2.3+bu!ld", "1.2.3+a+b", "1.2.3-rc+"):
        with pytest.raises(ValueError):
            parse(bad)


def test_parse_leading_zero_allowed_in_alnum_prerelease_and_build():
    assert parse("1.0.0-0a.0").prerelease == ("0a", "0")
    assert parse("1.0.0+007").build == ("007",)


def test_parse_non_string_raises_type_error():
    with pytest.raises(TypeError):
        parse(123)  # type: ignore[arg-type]


def test_compare_core_numeric():
    pairs = [("1.0.0", "2.0.0"), ("2.0.0", "2.1.0"), ("2.1.0", "2.1.1"), ("1.9.0", "1.10.0"), ("1.99.99", "2.0.0")]
    for a, b in pairs:
        assert compare(a, b) == -1, (a, b)
        assert compare(b, a) == 1, (b, a)


def test_compare_equal():
    assert compare("1.2.3", "1.2.3") == 0
    assert compare("1.0.0-rc.1", "1.0.0-rc.1") == 0


def test_prerelease_lower_than_release():
    assert compare("1.0.0-alpha", "1.0.0") == -1
    assert compare("1.0.0", "1.0.0-rc.1") == 1


def test_core_takes_precedence_over_prerelease():
    assert compare("1.0.1-alpha", "1.0.0") == 1
    assert compare("0.9.9", "1.0.0-alpha") == -1


def test_numeric_identifiers_compare_numerically():
    assert compare("1.0.0-beta.2", "1.0.0-beta.11") == -1
    assert compare("1.0.0-rc.10", "1.0.0-rc.9") == 1


def test_numeric_identifier_lower_than_alphanumeric():
    assert compare("1.0.0-1", "1.0.0-alpha") == -1
    assert compare("1.0.0-alpha.beta", "1.0.0-alpha.1") == 1


def test_alphanumeric_identifiers_compare_in_ascii_order():
    assert compare("1.0.0-alpha", "1.0.0-beta") == -1
    assert compare("1.0.0-Beta", "1.0.0-alpha") == -1
    assert compare("1.0.0-alpha10", "1.0.0-alpha9") == -1


def test_longer_prerelease_has_higher_precedence():
    assert compare("1.0.0-alpha", "1.0.0-alpha.1") == -1
    assert compare("1.0.0-alpha.1.0", "1.0.0-alpha.1") == 1


def test_build_metadata_is_ignored():
    assert compare("1.0.0+build.1", "1.0.0+build.2") == 0
    assert compare("1.0.0-alpha+zzz", "1.0.0-alpha") == 0


def test_compare_invalid_raises():
    with pytest.raises(ValueError):
        compare("1.0.0", "1.0")


def test_sort_spec_example_order():
    expected = [
        "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
        "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0",
    ]
    shuffled = [expected[i] for i in (7, 3, 0, 5, 1, 6, 4, 2)]
    assert sort_versions(shuffled) == expected


def test_sort_is_stable_and_keeps_strings():
    versions = ["2.0.0", "1.0.0+b", "1.0.0", "1.0.0+a", "0.1.0"]
    assert sort_versions(versions) == ["0.1.0", "1.0.0+b", "1.0.0", "1.0.0+a", "2.0.0"]


def test_sort_does_not_mutate_input_and_accepts_iterables():
    versions = ["1.10.0", "1.2.0"]
    assert sort_versions(iter(versions)) == ["1.2.0", "1.10.0"]
    assert versions == ["1.10.0", "1.2.0"]
    assert sort_versions([]) == []


def test_sort_invalid_raises():
    with pytest.raises(ValueError):
        sort_versions(["1.0.0", "banana"])
