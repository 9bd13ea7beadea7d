torchrun --nnodes=1 --nproc_per_node=4 train.py \
  --lm_path anas-awadalla/mpt-1b-redpajama-200b --tokenizer_path anas-awadalla/mpt-1b-redpajama-200b \
  --cross_attn_every_n_layers 1 --dataset_resampled --batch_size_mmc4 32 --batch_size_laion 64 \
  --train_num_samples_mmc4 125000 --loss_multiplier_laion 0.2 --workers=4 --run_name OF-3B \
  --laion_shards "/path/to/shards/shard-{0000..0999}.tar" --report_to_wandb
