locals {
  script = templatefile("${path.module}/boot.sh.tftpl", { role = "ingest" })
}
