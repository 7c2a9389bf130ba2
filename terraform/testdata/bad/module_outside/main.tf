module "net" {
  source = "../../../../elsewhere"
}
