/* Opening a store's files without following symbolic links (POSIX).

   zf_open_nolinks(dirfd, path, flags, mode) opens `path`, relative to the directory
   `dirfd`, like openat(2) -- but fails with ELOOP when any component of `path`
   (the last one included) is a symbolic link (EEXIST for the last one with
   O_CREAT | O_EXCL, which never follows it), and with EXDEV when `path` would
   leave `dirfd` (".." or an absolute path).  The check and the open are one step,
   so a directory swapped for a link while the call runs cannot redirect it.

   On Linux 5.6+ this is one openat2(2) call (RESOLVE_BENEATH |
   RESOLVE_NO_SYMLINKS).  Where openat2 is missing (older kernels, other systems,
   a seccomp filter that refuses it) the path is walked one directory at a time
   with O_NOFOLLOW, which gives the same answers.

   Twin: zarrfast.kernels.reference.open_nolinks. */
#ifndef ZF_FILES_H
#define ZF_FILES_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif
#ifdef O_PATH
#define ZF_O_SEARCH O_PATH
#else
#define ZF_O_SEARCH O_RDONLY
#endif

#if defined(__linux__)
#include <sys/syscall.h>
#if defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define ZF_HAVE_OPENAT2 1
#endif
#endif
#endif

static int zf_openat2_works = 1; /* cleared once openat2 says ENOSYS */

static int zf_open_walk(int dirfd, const char* path, int flags, int mode) {
    char part[NAME_MAX + 1];
    const char* p = path;
    const char* slash;
    size_t len;
    int cur = dirfd, next;
    struct stat st;
    if (path[0] == '/') { errno = EXDEV; return -1; }
    for (;;) {
        slash = strchr(p, '/');
        len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 0 || len > NAME_MAX) {
            if (cur != dirfd) close(cur);
            errno = len ? ENAMETOOLONG : ENOENT;
            return -1;
        }
        memcpy(part, p, len);
        part[len] = '\0';
        if ((len == 2 && part[0] == '.' && part[1] == '.')) {
            if (cur != dirfd) close(cur);
            errno = EXDEV;
            return -1;
        }
        if (!slash) break;
        next = openat(cur, part, ZF_O_SEARCH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && (errno == ENOTDIR || errno == ELOOP)) {
            /* a link where a directory should be: ELOOP; a file: ENOTDIR */
            int saved = errno;
            if (fstatat(cur, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                saved = ELOOP;
            errno = saved;
        }
        if (cur != dirfd) { int e = errno; close(cur); errno = e; }
        if (next < 0) return -1;
        cur = next;
        p = slash + 1;
    }
    /* the last component: O_NOFOLLOW refuses a link; with O_PATH it would open the
       link itself, so look first */
    if (fstatat(cur, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
        if (cur != dirfd) close(cur);
        /* as openat2 says it: O_EXCL never follows the last component */
        errno = ((flags & O_CREAT) && (flags & O_EXCL)) ? EEXIST : ELOOP;
        return -1;
    }
    next = openat(cur, part, flags | O_NOFOLLOW | O_CLOEXEC, mode);
    if (cur != dirfd) { int e = errno; close(cur); errno = e; }
    return next;
}

static int zf_open_nolinks(int dirfd, const char* path, int flags, int mode) {
#if defined(ZF_HAVE_OPENAT2) && defined(SYS_openat2)
    if (zf_openat2_works) {
        struct open_how how;
        long fd;
        memset(&how, 0, sizeof how);
        how.flags = (unsigned long long)(flags | O_CLOEXEC);
        how.mode = (flags & O_CREAT) ? (unsigned long long)mode : 0;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
        do {
            fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        } while (fd < 0 && errno == EINTR);
        if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return (int)fd;
        if (errno == ENOSYS) zf_openat2_works = 0;
    }
#endif
    return zf_open_walk(dirfd, path, flags, mode);
}

/* The directory `path`, opened to be the `dirfd` of zf_open_nolinks: its
   descriptor; -2 when it does not exist (every file in it is missing); -1 with
   errno for another error. */
static int zf_open_root(const char* path) {
    int fd = open(path, ZF_O_SEARCH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) return -2;
    return fd < 0 ? -1 : fd;
}

/* Rename `tmp` to `name` (both in `dirfd`) only if `name` does not exist, in one step
   (Linux renameat2 with RENAME_NOREPLACE): 0 when renamed; otherwise -1 with errno,
   EEXIST when `name` exists, ENOSYS where the system or the file system cannot do it
   (older kernels, NFS: the caller checks `name` itself, then renames).  A new file
   thus needs no look at its name before it is renamed into place. */
static int zf_renameat2_works = 1; /* cleared once renameat2 says ENOSYS */

static int zf_rename_new(int dirfd, const char* tmp, const char* name) {
#if defined(__linux__) && defined(SYS_renameat2)
    if (zf_renameat2_works) {
        if (syscall(SYS_renameat2, dirfd, tmp, dirfd, name, 1 /* RENAME_NOREPLACE */) == 0)
            return 0;
        if (errno == ENOSYS) zf_renameat2_works = 0;
        if (errno == EEXIST) return -1;
        errno = ENOSYS; /* (EINVAL: a file system without it; EPERM: a filter...) */
        return -1;
    }
#else
    (void)dirfd; (void)tmp; (void)name;
#endif
    errno = ENOSYS;
    return -1;
}

#endif
