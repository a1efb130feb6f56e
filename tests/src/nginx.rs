//! Debian's nginx in front of gateways, configured by the shipped `deploy/nginx.conf`: only where
//! it listens (a port of loopback) and the gateways it passes to are changed, so a test through it
//! tests the file operators use.

use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running nginx; dropping it stops it.
pub struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Nginx {
    /// nginx in front of the gateways at `upstreams` (`127.0.0.1:PORT` each).
    pub fn start(upstreams: &[&str]) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        // nginx takes no port 0: one the kernel just gave out and took back.
        let port =
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port();
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/nginx.conf");
        let shipped = std::fs::read_to_string(shipped).expect("deploy/nginx.conf");
        let servers: String = upstreams.iter().map(|u| format!("    server {u};\n")).collect();
        let mut lines = shipped.lines().filter(|l| !l.trim_start().starts_with("server gateway-"));
        let mut site = String::new();
        for line in lines.by_ref() {
            site.push_str(line);
            site.push('\n');
            if line.starts_with("upstream airlock") {
                site.push_str(&servers);
            }
        }
        let listen = "    listen 80;";
        assert!(site.contains(listen), "deploy/nginx.conf listens on port 80");
        let site = site.replace(listen, &format!("    listen 127.0.0.1:{port};"));
        let at = dir.path().display();
        let config = format!(
            "daemon off;\nmaster_process off;\npid {at}/nginx.pid;\nevents {{}}\nhttp {{\n\
             access_log off;\nclient_body_temp_path {at}/body;\nproxy_temp_path {at}/proxy;\n\
             fastcgi_temp_path {at}/fastcgi;\nuwsgi_temp_path {at}/uwsgi;\n\
             scgi_temp_path {at}/scgi;\n{site}}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), config).unwrap();
        let child = Command::new("nginx")
            .arg("-p")
            .arg(dir.path())
            .args(["-c", "nginx.conf", "-e", "error.log"])
            .stdout(Stdio::null())
            .spawn()
            .expect("nginx runs (Debian's nginx package)");
        let mut nginx = Nginx { child, dir, base: format!("http://127.0.0.1:{port}") };
        nginx.until_listening(port);
        nginx
    }

    /// Waits until nginx takes connections on `port` (it says nothing when it does), failing
    /// with its error log if it exits or takes 10 s.
    fn until_listening(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            let exited = self.child.try_wait().unwrap();
            assert!(exited.is_none() && Instant::now() < deadline, "nginx: {}", self.errors());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// What nginx wrote to its error log.
    pub fn errors(&self) -> String {
        let mut log = String::new();
        let file = std::fs::File::open(self.dir.path().join("error.log"));
        file.and_then(|mut f| f.read_to_string(&mut log)).ok();
        log
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
