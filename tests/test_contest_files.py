"""scripts/contest_files.py: public contest files gathered by the problem their leaderboard line names."""

import importlib.util
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("contest_files", ROOT / "scripts" / "contest_files.py")
contest_files = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(contest_files)

KERNEL = "def custom_kernel(data):\n    return data[-1]\n"


def committed(repository: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repository / name).parent.mkdir(parents=True, exist_ok=True)
        (repository / name).write_text(text)
    git = ["git", "-C", str(repository), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "files"], check=True)


def test_every_file_of_a_problem_once_under_that_problem(tmp_path):
    repository = tmp_path / "kernels"
    committed(repository, {
        "gemm/final.py": "#!POPCORN leaderboard final_nvfp4_gemm\n" + KERNEL,  # a contest leaderboard's name
        "gemv/a.py": "#!POPCORN leaderboard nvfp4_gemv\n" + KERNEL,
        "gemv/copy_of_a.py": "#!POPCORN leaderboard nvfp4_gemv\n" + KERNEL,  # the same content: kept once
        "other/vectoradd.py": "#!POPCORN leaderboard vectoradd_py\n" + KERNEL,  # another contest's problem
        "notes/plain.py": KERNEL,  # no leaderboard line
        "gemv/README.md": "#!POPCORN leaderboard nvfp4_gemv\n",  # not Python
    })
    out = tmp_path / "out"
    counts = contest_files.gather(out, [str(repository)])
    assert counts == {"nvfp4_gemm": 1, "nvfp4_gemv": 1}
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.py")) == [
        "nvfp4_gemm/kernels__gemm__final.py", "nvfp4_gemv/kernels__gemv__a.py"]
    assert (out / "nvfp4_gemm" / "kernels__gemm__final.py").read_text().endswith(KERNEL)
