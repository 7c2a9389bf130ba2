output "cql_endpoint" {
  description = "host:port of the CQL endpoint: the network load balancer's DNS name and 9042."
  value       = "${aws_lb.cql.dns_name}:9042"
}

output "lb_dns_name" {
  description = "DNS name of the network load balancer."
  value       = aws_lb.cql.dns_name
}

output "autoscaling_group_name" {
  description = "Name of the frontends' Auto Scaling group."
  value       = aws_autoscaling_group.this.name
}
