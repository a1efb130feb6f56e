//! Where a delivery may go. A subscription's URL is checked when it is made (https, or http to
//! this machine only with `--webhooks-allow-loopback`), and every address a delivery connects to
//! is checked again when its name is looked up: never a link-local address (the cloud metadata
//! services live there), an unspecified or a multicast one, and this machine only with the flag.
//! Redirects are never followed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;

/// Whether a delivery may connect to `ip`.
pub fn allowed(ip: IpAddr, loopback: bool) -> Result<(), String> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    let refused = match ip {
        IpAddr::V4(v4) => v4_refused(v4, loopback),
        IpAddr::V6(v6) => v6_refused(v6, loopback),
    };
    match refused {
        Some(what) => Err(format!("{ip} is {what}, where webhooks are never delivered")),
        None => Ok(()),
    }
}

fn v4_refused(ip: Ipv4Addr, loopback: bool) -> Option<&'static str> {
    if ip.is_link_local() {
        Some("a link-local address (cloud metadata services answer there)")
    } else if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
        Some("not a host's address")
    } else if ip.is_loopback() && !loopback {
        Some("this machine (allowed only with --webhooks-allow-loopback)")
    } else {
        None
    }
}

fn v6_refused(ip: Ipv6Addr, loopback: bool) -> Option<&'static str> {
    // fe80::/10 is link-local; fd00:ec2::254 is a cloud's metadata service.
    let metadata = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
    if (ip.segments()[0] & 0xffc0) == 0xfe80 || ip == metadata {
        Some("a link-local address (cloud metadata services answer there)")
    } else if ip.is_unspecified() || ip.is_multicast() {
        Some("not a host's address")
    } else if ip.is_loopback() && !loopback {
        Some("this machine (allowed only with --webhooks-allow-loopback)")
    } else {
        None
    }
}

/// Whether `host` names this machine.
fn is_loopback_name(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost")
}

/// Checks a subscription's URL: an absolute `https` URL (or `http` to this machine, with
/// `loopback`), without a fragment, whose host is not an address deliveries never reach.
pub fn check_url(text: &str, loopback: bool) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{text:?} is not an absolute URL ({e})"))?;
    let host = url.host_str().ok_or_else(|| format!("{text:?} names no host"))?;
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
        _ => None,
    };
    let local = ip.map_or_else(|| is_loopback_name(host), |ip| ip.is_loopback());
    match url.scheme() {
        "https" => {}
        "http" if local && loopback => {}
        "http" if local => {
            return Err("an http URL to this machine is taken only when the gateway runs with \
                 --webhooks-allow-loopback; use https"
                .into());
        }
        "http" => {
            return Err("a webhook URL must be https (its deliveries carry session data)".into());
        }
        other => return Err(format!("a webhook URL must be https, not {other}")),
    }
    if url.fragment().is_some() {
        return Err("a webhook URL takes no #fragment".into());
    }
    if let Some(ip) = ip {
        allowed(ip, loopback)?;
    } else if local && !loopback {
        return Err("localhost is allowed only with --webhooks-allow-loopback".into());
    }
    Ok(url)
}

/// Looks names up for deliveries and keeps only the addresses they may reach.
pub struct Resolver {
    /// This machine is allowed.
    pub loopback: bool,
}

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let loopback = self.loopback;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut why = None;
            let kept: Vec<SocketAddr> = found
                .into_iter()
                .filter(|addr| match allowed(addr.ip(), loopback) {
                    Ok(()) => true,
                    Err(e) => {
                        why.get_or_insert(e);
                        false
                    }
                })
                .collect();
            if kept.is_empty() {
                let why = why.unwrap_or_else(|| "no address".into());
                return Err(format!(
                    "{host} resolves only to addresses deliveries never reach: {why}"
                )
                .into());
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The resolver, shared.
pub fn resolver(loopback: bool) -> Arc<Resolver> {
    Arc::new(Resolver { loopback })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_is_taken_and_http_only_to_loopback_with_the_flag() {
        assert!(check_url("https://hooks.example.com/in", false).is_ok());
        assert!(check_url("http://hooks.example.com/in", true).is_err());
        assert!(check_url("http://127.0.0.1:9000/in", false).is_err());
        assert!(check_url("http://127.0.0.1:9000/in", true).is_ok());
        assert!(check_url("http://localhost:9000/in", true).is_ok());
        assert!(check_url("http://[::1]:9000/in", true).is_ok());
        assert!(check_url("ftp://example.com", true).is_err());
        assert!(check_url("not a url", true).is_err());
    }

    #[test]
    fn link_local_and_metadata_addresses_are_never_reached() {
        assert!(check_url("https://169.254.169.254/latest/meta-data", true).is_err());
        assert!(check_url("https://[fe80::1]/", true).is_err());
        assert!(check_url("https://[fd00:ec2::254]/", true).is_err());
        assert!(check_url("https://[::ffff:169.254.169.254]/", true).is_err());
        assert!(check_url("https://0.0.0.0/", true).is_err());
        assert!(allowed("10.0.0.5".parse().unwrap(), false).is_ok());
        assert!(allowed("127.0.0.1".parse().unwrap(), false).is_err());
        assert!(allowed("::ffff:127.0.0.1".parse().unwrap(), false).is_err());
    }
}
