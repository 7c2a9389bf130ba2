output "autoscaling_group_name" {
  description = "Name of the compactors' Auto Scaling group."
  value       = aws_autoscaling_group.this.name
}

output "metric_namespace" {
  description = "CloudWatch namespace of the backlog metrics, with the dimension cluster=<name>."
  value       = var.metric_namespace
}
