output "cql_endpoint" {
  description = "CQL endpoint (host:port) of the cluster: the network load balancer."
  value       = module.frontend.cql_endpoint
}

output "bucket_name" {
  description = "Name of the bucket that holds the cluster's data."
  value       = module.bucket.name
}

output "nats_url" {
  description = "NATS URLs of the JetStream cluster, for sediment admin commands run in the VPC."
  value       = module.nats.url
}

output "compactor_metric_namespace" {
  description = "CloudWatch namespace of the compaction backlog metrics."
  value       = module.compactor.metric_namespace
}
