"""Private parts of the hidden-test sandbox; the public face is :mod:`pytest_ldd.sandbox`.

- ``limits``: :class:`Limits`, the resource limits of one run;
- ``staging``: the fresh copies, the hidden tests' expected ids and the canary tests;
- ``twins``: twin canaries, copies of the hidden tests with perturbed expected values;
- ``leftovers``: what the run left behind, checked and removed as hostile;
- ``runner``: the child-side bootstrap script (run in the child, never imported there);
- ``confinement``: Linux Landlock, which the process running workspace code applies to
  itself (loaded from a file by the runner, sent to the subject over its pipe);
- ``integrity``: the hidden tests' module files checked against their staged hashes as
  they are imported (loaded from a file by the runner and the judge);
- ``channel``: reading the authenticated result records the child sends;
- ``process``: starting, watching and killing the child and its process group;
- ``judge``: turning what was observed into a verdict.
"""
