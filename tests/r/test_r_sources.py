"""The R package compiles the C core through r/src's symlinks to native/ (one copy of the
sources): every native file has its link, nothing stale lingers, and git tracks links, not
copies, so R CMD INSTALL r / R CMD build r / remotes work from a clean clone."""

import glob
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_native_file_is_linked_into_r_src():
    r = subprocess.run(
        ["bash", os.path.join(ROOT, "scripts", "sync-native.sh"), "--check"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "native", "*.[ch]")))
    assert names and len(names) > 40
    for b in names:
        link = os.path.join(ROOT, "r", "src", b)
        assert os.path.islink(link) and os.readlink(link) == f"../../native/{b}", b
        assert os.path.samefile(link, os.path.join(ROOT, "native", b))


def test_git_tracks_links_not_copies():
    if not os.path.isdir(os.path.join(ROOT, ".git")):
        return  # an sdist or wheel build tree has no git metadata: the link test above covers it
    out = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "-s", "r/src"], capture_output=True, text=True, check=True
    ).stdout
    modes = {line.split("\t")[1].split("/")[-1]: line.split()[0] for line in out.splitlines()}
    natives = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "native", "*.[ch]"))}
    assert natives <= set(modes), sorted(natives - set(modes))
    assert all(modes[b] == "120000" for b in natives), sorted(
        b for b in natives if modes[b] != "120000"
    )
    assert all(b.startswith("r_") or b in ("init.c", "Makevars") for b in set(modes) - natives)
