output "url" {
  description = "NATS URLs of the three servers, comma-separated, for -manifest.nats-url. Taken from the network interfaces, so that users of it are created after the addresses are reserved."
  value       = join(",", [for n in aws_network_interface.server : "nats://${n.private_ip}:4222"])
}

output "private_ips" {
  description = "Fixed private IPs of the three servers."
  value       = aws_network_interface.server[*].private_ip
}
