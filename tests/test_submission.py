"""Reading a submission file without running it."""

import hashlib

import pytest

from harness.contract.submission_file import SubmissionFileError, leaderboard_problem, read_submission


def test_directives_and_hash(tmp_path):
    path = tmp_path / "s.py"
    source = "#!POPCORN leaderboard nvfp4_gemm\n#!POPCORN author ada\ndef custom_kernel(data):\n    return data\n"
    path.write_text(source)
    file = read_submission(path)
    assert (file.leaderboard, file.author) == ("nvfp4_gemm", "ada")
    assert file.sha256 == hashlib.sha256(source.encode()).hexdigest()


def test_syntax_error_is_one_clear_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def custom_kernel(data)\n    return data\n")
    with pytest.raises(SubmissionFileError) as error:
        read_submission(path)
    first, source, caret = str(error.value).split("\n")  # one line, then the source line and a caret
    assert "line 1" in first and "fix it" in first
    assert source == "    def custom_kernel(data)" and caret == " " * 27 + "^"


def test_missing_file(tmp_path):
    with pytest.raises(SubmissionFileError, match="no such file"):
        read_submission(tmp_path / "absent.py")


def test_crlf_and_byte_order_mark_files_read_as_python_does(tmp_path):
    """Windows editors write CRLF and sometimes a BOM: the directives must not carry a '\\r'."""
    path = tmp_path / "s.py"
    path.write_bytes(b"\xef\xbb\xbf#!POPCORN leaderboard nvfp4_gemv\r\n#!POPCORN author  Ada L \r\n"
                     b"def custom_kernel(data):\r\n    return data\r\n")
    file = read_submission(path)
    assert (file.leaderboard, file.author) == ("nvfp4_gemv", "Ada L")


@pytest.mark.parametrize(("name", "words"), [("folder.py", "is a folder"), ("kernel.txt", "not a .py file")])
def test_a_folder_or_another_suffix_is_named_as_such(tmp_path, name, words):
    path = tmp_path / name
    path.mkdir() if name == "folder.py" else path.write_text("def custom_kernel(data):\n    return data\n")
    with pytest.raises(SubmissionFileError, match=words):
        read_submission(path)


def test_a_file_too_deeply_nested_for_the_parser_is_one_line(tmp_path):
    """The parser's RecursionError / MemoryError: `harness submit` printed a traceback for such a file."""
    path = tmp_path / "deep.py"
    path.write_bytes(b"a" + b"[0]" * 6000)
    with pytest.raises(SubmissionFileError, match="too deeply nested to parse"):
        read_submission(path)


PROBLEMS = ["fp8_blockwise_gemm", "mxfp8_gemm", "nvfp4_dual_gemm", "nvfp4_gemm", "nvfp4_gemv", "nvfp4_group_gemm"]


@pytest.mark.parametrize(("leaderboard", "problem"), [
    ("nvfp4_dual_gemm", "nvfp4_dual_gemm"),
    ("final_nvfp4_dual_gemm", "nvfp4_dual_gemm"),  # the contest's own leaderboard names, as its files carry them
    ("modal_nvfp4_dual_gemm", "nvfp4_dual_gemm"),
    ("modal_nvfp4_gemm", "nvfp4_gemm"),  # not nvfp4_dual_gemm's ending, nor nvfp4_gemv's
    ("b200_mxfp8_gemm", "mxfp8_gemm"),
    ("xnvfp4_gemm", "xnvfp4_gemm"),  # no underscore before the name: another leaderboard, left for 'unknown problem'
    ("vectoradd_py", "vectoradd_py"),
    ("nvfp4_gemm_v2", "nvfp4_gemm_v2"),
    (None, None),
])
def test_a_contest_leaderboard_name_runs_its_problem(leaderboard, problem):
    assert leaderboard_problem(leaderboard, PROBLEMS) == problem


def test_the_longest_problem_a_name_ends_with_is_the_one():
    assert leaderboard_problem("final_dual_gemm", ["gemm", "dual_gemm"]) == "dual_gemm"
