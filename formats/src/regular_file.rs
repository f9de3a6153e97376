//! Artifact files are regular files: opening them for reading, writing them atomically.
//!
//! Opening a FIFO for reading blocks until a writer comes (forever, from a user's
//! point of view); a process substitution (`<(...)`) is a pipe whose length reads as 0;
//! a directory fails late with an obscure OS error; and renaming a fresh file over a
//! device (`-o /dev/full`, as root) replaces the device. So the kind of file is checked
//! first, from its metadata, before anything is opened, and anything but a regular file
//! is refused with an error that says what it is.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a non-regular file is, for messages.
fn kind_name(ft: fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO or pipe";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// The error for a path that exists and is not a regular file.
fn not_regular(ft: fs::FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "is {}, not a regular file (artifacts are read from and written to regular files)",
            kind_name(ft)
        ),
    )
}

/// Fails unless `path` is a regular file (symbolic links followed).
pub fn check_regular(path: &Path) -> io::Result<()> {
    let ft = fs::metadata(path)?.file_type();
    if ft.is_file() {
        Ok(())
    } else {
        Err(not_regular(ft))
    }
}

/// Opens `path` for reading if it is a regular file; anything else is refused before
/// it is opened, so a FIFO cannot block.
pub fn open_regular(path: &Path) -> io::Result<fs::File> {
    check_regular(path)?;
    let file = fs::File::open(path)?;
    // The path may have been swapped between the check and the open.
    let ft = file.metadata()?.file_type();
    if ft.is_file() {
        Ok(file)
    } else {
        Err(not_regular(ft))
    }
}

/// Writes `bytes` to `path` atomically: to a fresh temporary file in the same directory,
/// flushed to disk, then renamed over `path`. A crash or error midway leaves either the
/// old file or none, never a half-written one, and the temporary file is removed on
/// error. An existing `path` that is not a regular file (a device, a FIFO, a directory)
/// is refused, never replaced; a symbolic link is written through, to its target.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let target = match fs::metadata(path) {
        Ok(m) if m.is_file() => fs::canonicalize(path)?,
        Ok(m) => return Err(not_regular(m.file_type())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e),
    };
    let Some(name) = target.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path has no file name",
        ));
    };
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, &target)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // Make the rename itself durable; best effort (not all platforms can open a
    // directory).
    #[cfg(unix)]
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "stackmask-regular-file-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp"))
            .collect()
    }

    #[test]
    fn directories_and_devices_are_refused_not_replaced() {
        let dir = scratch("dirs");
        let e = write_atomically(&dir, b"x").unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        assert!(dir.is_dir());
        let e = open_regular(&dir).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        #[cfg(unix)]
        {
            let e = write_atomically(Path::new("/dev/null"), b"x").unwrap_err();
            assert!(e.to_string().contains("character device"), "{e}");
            assert!(!fs::metadata("/dev/null").unwrap().is_file());
            let e = open_regular(Path::new("/dev/null")).unwrap_err();
            assert!(e.to_string().contains("character device"), "{e}");
        }
        assert!(leftovers(&dir).is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = scratch("fifo");
        let fifo = dir.join("a.smask");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        // Opening the FIFO for reading would block this test forever.
        let e = open_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = write_atomically(&fifo, b"x").unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = scratch("fail");
        // A parent that does not exist: the write fails and leaves nothing behind.
        let missing = dir.join("no-such-dir").join("out.smask");
        assert!(write_atomically(&missing, b"x").is_err());
        assert!(leftovers(&dir).is_empty());
        let ok = dir.join("out.smask");
        write_atomically(&ok, b"abc").unwrap();
        assert_eq!(fs::read(&ok).unwrap(), b"abc");
        write_atomically(&ok, b"de").unwrap();
        assert_eq!(fs::read(&ok).unwrap(), b"de");
        assert!(leftovers(&dir).is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }
}
