import pytest

from semver import Version, parse, parse_version_info


@pytest.mark.parametrize("as_bytes", [False, True])
@pytest.mark.parametrize("optional_minor_and_patch", [False, True])
def test_parse_version_length_limit(as_bytes, optional_minor_and_patch):
    version = "1.2.3+" + "a" * (Version.MAX_LENGTH - len("1.2.3+"))
    accepted = version.encode("utf-8") if as_bytes else version
    rejected = accepted + (b"a" if as_bytes else "a")

    assert str(Version.parse(accepted, optional_minor_and_patch)) == version
    with pytest.raises(ValueError, match="maximum length"):
        Version.parse(rejected, optional_minor_and_patch)
    assert not Version.is_valid(rejected)


def test_parse_rejects_long_versions_before_native_backend(monkeypatch):
    def unexpected_backend(version):
        pytest.fail("Oversized input must not reach the native backend")

    monkeypatch.setattr("semver.version._native_parse_parts", unexpected_backend)
    with pytest.raises(ValueError, match="maximum length"):
        Version.parse("1.2.3+" + "a" * Version.MAX_LENGTH)


@pytest.mark.parametrize(
    "version,expected",
    [
        # no. 1
        (
            "1.2.3-alpha.1.2+build.11.e0f985a",
            {
                "major": 1,
                "minor": 2,
                "patch": 3,
                "prerelease": "alpha.1.2",
                "build": "build.11.e0f985a",
            },
        ),
        # no. 2
        (
            "1.2.3-alpha-1+build.11.e0f985a",
            {
                "major": 1,
                "minor": 2,
                "patch": 3,
                "prerelease": "alpha-1",
                "build": "build.11.e0f985a",
            },
        ),
        (
            "0.1.0-0f",
            {"major": 0, "minor": 1, "patch": 0, "prerelease": "0f", "build": None},
        ),
        (
            "0.0.0-0foo.1",
            {"major": 0, "minor": 0, "patch": 0, "prerelease": "0foo.1", "build": None},
        ),
        (
            "0.0.0-0foo.1+build.1",
            {
                "major": 0,
                "minor": 0,
                "patch": 0,
                "prerelease": "0foo.1",
                "build": "build.1",
            },
        ),
    ],
)
def test_should_parse_version(version, expected):
    result = parse(version)
    assert result == expected


@pytest.mark.parametrize(
    "version,expected",
    [
        # no. 1
        (
            "1.2-alpha.1.2+build.11.e0f985a",
            {
                "major": 1,
                "minor": 2,
                "patch": 0,
                "prerelease": "alpha.1.2",
                "build": "build.11.e0f985a",
            },
        ),
        # no. 2
        (
            "1-alpha-1+build.11.e0f985a",
            {
                "major": 1,
                "minor": 0,
                "patch": 0,
                "prerelease": "alpha-1",
                "build": "build.11.e0f985a",
            },
        ),
        (
            "0.1-0f",
            {"major": 0, "minor": 1, "patch": 0, "prerelease": "0f", "build": None},
        ),
        (
            "0-0foo.1",
            {"major": 0, "minor": 0, "patch": 0, "prerelease": "0foo.1", "build": None},
        ),
        (
            "0-0foo.1+build.1",
            {
                "major": 0,
                "minor": 0,
                "patch": 0,
                "prerelease": "0foo.1",
                "build": "build.1",
            },
        ),
    ],
)
def test_should_parse_version_with_optional_minor_and_patch(version, expected):
    result = Version.parse(version, optional_minor_and_patch=True)
    assert result == expected


def test_parse_version_info_str_hash():
    s_version = "1.2.3-alpha.1.2+build.11.e0f985a"
    v = parse_version_info(s_version)
    assert v.__str__() == s_version
    d = {}
    d[v] = ""  # to ensure that Version are hashable


@pytest.mark.parametrize(
    "version,expected",
    [
        # no. 1
        (
            "1.2.3-rc.0+build.0",
            {
                "major": 1,
                "minor": 2,
                "patch": 3,
                "prerelease": "rc.0",
                "build": "build.0",
            },
        ),
        # no. 2
        (
            "1.2.3-rc.0.0+build.0",
            {
                "major": 1,
                "minor": 2,
                "patch": 3,
                "prerelease": "rc.0.0",
                "build": "build.0",
            },
        ),
    ],
)
def test_should_parse_zero_prerelease(version, expected):
    result = parse(version)
    assert result == expected


@pytest.mark.parametrize("version", ["01.2.3", "1.02.3", "1.2.03"])
def test_should_raise_value_error_for_zero_prefixed_versions(version):
    with pytest.raises(ValueError):
        parse(version)


def test_equal_versions_have_equal_hashes():
    v1 = parse_version_info("1.2.3-alpha.1.2+build.11.e0f985a")
    v2 = parse_version_info("1.2.3-alpha.1.2+build.22.a589f0e")
    assert v1 == v2
    assert hash(v1) == hash(v2)
    d = {}
    d[v1] = 1
    d[v2] = 2
    assert d[v1] == 2
    s = set()
    s.add(v1)
    assert v2 in s


@pytest.mark.parametrize(
    "prerelease_a,prerelease_b",
    [
        # no. 1: zero-padded numeric identifier
        ("007", "7"),
        # no. 2: zero-padded identifier among several
        ("alpha.007.beta", "alpha.7.beta"),
        # no. 3: non-ASCII digit normalizes to its decimal value
        ("٧", "7"),
        # no. 4: empty prerelease equals a missing one
        ("", None),
    ],
)
def test_equal_prereleases_have_equal_hashes(prerelease_a, prerelease_b):
    v1 = Version(1, 2, 3, prerelease=prerelease_a)
    v2 = Version(1, 2, 3, prerelease=prerelease_b)
    assert v1 == v2
    assert hash(v1) == hash(v2)
    assert len({v1, v2}) == 1
    assert {v1: "found"}[v2] == "found"


def test_should_treat_superscript_digit_as_alphanumeric_identifier():
    # "²" satisfies str.isdigit() but not str.isdecimal(), and int("²")
    # raises ValueError. It must be treated as an alphanumeric identifier:
    # numeric identifiers always have lower precedence than non-numeric ones.
    v = Version(1, 2, 3, prerelease="²")
    assert Version(1, 2, 3, prerelease="7") < v
    assert isinstance(hash(v), int)


def test_parse_method_for_version_info():
    s_version = "1.2.3-alpha.1.2+build.11.e0f985a"
    v = Version.parse(s_version)
    assert str(v) == s_version


def test_next_version_with_invalid_parts():
    version = Version.parse("1.0.1")
    with pytest.raises(ValueError):
        version.next_version("invalid")


@pytest.mark.parametrize(
    "version, part, expected",
    [
        # major
        ("1.0.4-rc.1", "major", "2.0.0"),
        ("1.1.0-rc.1", "major", "2.0.0"),
        ("1.1.4-rc.1", "major", "2.0.0"),
        ("1.2.3", "major", "2.0.0"),
        ("1.0.0-rc.1", "major", "1.0.0"),
        # minor
        ("0.2.0-rc.1", "minor", "0.2.0"),
        ("0.2.5-rc.1", "minor", "0.3.0"),
        ("1.3.1", "minor", "1.4.0"),
        # patch
        ("1.3.2", "patch", "1.3.3"),
        ("0.1.5-rc.2", "patch", "0.1.5"),
        # prerelease
        ("0.1.4", "prerelease", "0.1.5-rc.1"),
        ("0.1.5-rc.1", "prerelease", "0.1.5-rc.2"),
        # special cases
        ("0.2.0-rc.1", "patch", "0.2.0"),  # same as "minor"
        ("1.0.0-rc.1", "patch", "1.0.0"),  # same as "major"
        ("1.0.0-rc.1", "minor", "1.0.0"),  # same as "major"
        # build-only versions: build metadata does not affect precedence,
        # so next_version should bump the version, not just strip the build
        ("1.2.3+build.5", "patch", "1.2.4"),
        ("1.0.0+build.5", "patch", "1.0.1"),
        ("0.1.4+build.5", "patch", "0.1.5"),
        ("1.2.0+build.5", "minor", "1.3.0"),
        ("1.0.0+build.5", "major", "2.0.0"),
        # prerelease+build: build is stripped along with prerelease during finalization
        ("1.2.3-rc.1+build.5", "patch", "1.2.3"),
        ("1.2.3-rc.1+build.5", "prerelease", "1.2.3-rc.2"),
        ("1.2.3-rc1+build.5", "prerelease", "1.2.3-rc2"),
    ],
)
def test_next_version_with_versioninfo(version, part, expected):
    ver = Version.parse(version)
    next_version = ver.next_version(part)
    assert isinstance(next_version, Version)
    assert str(next_version) == expected
