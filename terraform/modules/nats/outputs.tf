output "url" {
  description = "NATS URLs of the three servers, comma-separated, for -manifest.nats-url."
  value       = join(",", [for n in local.nodes : "nats://${n.ip}:4222"])
}

output "private_ips" {
  description = "Fixed private IPs of the three servers."
  value       = [for n in local.nodes : n.ip]
}
