"""Another process holding a file lock, as a zarrfast writer in another process would."""

from __future__ import annotations

import textwrap

#: ``python -c FLOCK_HOLDER PATH``: opens PATH (made if missing), takes ``flock`` on it,
#: prints ``locked`` and holds it for a minute (or until killed)
FLOCK_HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(60)
""")
